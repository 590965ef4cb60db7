package enforce

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The response headers SetHeaders writes. The X-RateLimit-* trio is what
// the reference gateway sends (and what its nginx configuration copies);
// RateLimit-Policy and RateLimit are the IETF draft's structured fields
// (draft-ietf-httpapi-ratelimit-headers), for clients that read those.
const (
	HeaderLimit      = "X-RateLimit-Limit"
	HeaderRemaining  = "X-RateLimit-Remaining"
	HeaderReset      = "X-RateLimit-Reset"
	HeaderPolicy     = "RateLimit-Policy"
	HeaderRateLimit  = "RateLimit"
	HeaderRetryAfter = "Retry-After"
)

// SetHeaders writes the rate-limit headers of decision d into h, replacing
// any h already holds:
//
//	X-RateLimit-Limit: 60
//	X-RateLimit-Remaining: 0
//	X-RateLimit-Reset: 1767225660        (Unix seconds, as the reference)
//	RateLimit-Policy: "caller:group:developers:60";q=60;w=60
//	RateLimit: "caller:group:developers:60";r=0;t=42
//	Retry-After: 42                      (only when the call is refused)
//
// The numbers describe the tightest gate (on a throttle, the denying gate
// that resets last) and the policy is named after that gate's definition
// id ("rlctl", without w, for a hand-made Decision that does not list its
// gates). t and Retry-After are whole seconds rounded up, so a client that
// waits them never arrives before the window has turned; Retry-After is at
// least 1. now is the time the decision was made (the Enforcer's clock).
//
// A decision without gates (Limit 0) carries no rate headers, and neither
// does a quarantine: it is an access decision, not a rate, and a client must
// not read it as "retry later". A fail-closed denial carries Retry-After
// only.
func SetHeaders(h http.Header, d Decision, now time.Time) {
	for _, k := range []string{HeaderLimit, HeaderRemaining, HeaderReset, HeaderPolicy, HeaderRateLimit, HeaderRetryAfter} {
		h.Del(k)
	}
	if d.Reason == ReasonQuarantined {
		return
	}
	if !d.Allowed {
		wait := d.RetryAfter
		if wait <= 0 && d.Limit > 0 {
			wait = d.Reset.Sub(now)
		}
		h.Set(HeaderRetryAfter, strconv.FormatInt(max(ceilSeconds(wait), 1), 10))
	}
	if d.Limit <= 0 {
		return
	}
	remaining := max(d.Remaining, 0)
	h.Set(HeaderLimit, strconv.FormatInt(d.Limit, 10))
	h.Set(HeaderRemaining, strconv.FormatInt(remaining, 10))
	h.Set(HeaderReset, strconv.FormatInt(d.Reset.Unix(), 10))

	name, window := "rlctl", 0
	if g, ok := headlineGate(d); ok {
		name, window = g.DefinitionID, g.WindowSeconds
	}
	policy := sfString(name) + ";q=" + strconv.FormatInt(d.Limit, 10)
	if window > 0 {
		policy += ";w=" + strconv.Itoa(window)
	}
	h.Set(HeaderPolicy, policy)
	h.Set(HeaderRateLimit, sfString(name)+";r="+strconv.FormatInt(remaining, 10)+
		";t="+strconv.FormatInt(max(ceilSeconds(d.Reset.Sub(now)), 0), 10))
}

// headlineGate finds the gate whose numbers d.Limit, d.Remaining and
// d.Reset carry, by the rule the Enforcer picks them with: on a throttle
// the denying gate that resets last, else the enforce gate with the least
// room (the first of equals, in the order of d.Gates).
func headlineGate(d Decision) (Gate, bool) {
	if !d.Allowed && len(d.Denied) > 0 {
		latest := d.Denied[0]
		for _, g := range d.Denied[1:] {
			if g.Reset.After(latest.Reset) {
				latest = g
			}
		}
		return latest, true
	}
	found := -1
	for i, g := range d.Gates {
		if !g.Shadow && (found < 0 || g.Remaining < d.Gates[found].Remaining) {
			found = i
		}
	}
	if found < 0 || d.Gates[found].Limit != d.Limit {
		return Gate{}, false
	}
	return d.Gates[found], true
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return int64(d / time.Second)
	}
	return int64((d + time.Second - 1) / time.Second)
}

// sfString renders s as a structured-field string (RFC 8941 section
// 3.3.3): quoted, with '"' and '\' escaped. Bytes a header cannot carry
// (outside printable ASCII) become '?'; definition ids are ASCII in
// practice, so this only guards the header against odd names.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
