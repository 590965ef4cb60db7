package httpgate

import (
	"net/http"
	"net/textproto"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
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
	// HeaderLockoutRemaining carries, on a locked-out answer
	// (enforce.ReasonLockedOut), the seconds the escalation lockout lasts
	// still, beside Retry-After.
	HeaderLockoutRemaining = "X-Lockout-Remaining"
	// HeaderDegraded is 1 on the answer to a call decided in the degraded
	// mode (enforce.Decision.Degraded): the counter store was unreachable
	// and this replica decided on its share of the limits. It sits beside
	// the X-RateLimit-* trio, a vendor header, rather than among the IETF
	// draft's RateLimit-* fields, which are the draft's to name.
	HeaderDegraded = "X-RateLimit-Degraded"
)

// SetHeaders writes the rate-limit headers of decision d into h, replacing
// any h already holds:
//
//	X-RateLimit-Limit: 60
//	X-RateLimit-Remaining: 0
//	X-RateLimit-Reset: 1767225660        (Unix seconds, as the reference)
//	RateLimit-Policy: "caller:group:developers:60";q=60;w=60, "target:mcp_server:s:60";q=100;w=60;rlctl-burst=20
//	RateLimit: "caller:group:developers:60";r=0;t=42
//	Retry-After: 42                      (only when the call is refused)
//
// RateLimit and the X-RateLimit-* trio describe the tightest gate (on a
// throttle, the denying gate that must wait longest; else the enforce
// gate with the least room) and RateLimit names it after its definition
// id ("rlctl", without w, for a hand-made Decision that does not list its
// gates). RateLimit-Policy lists every enforce policy that applied to the
// call, the tightest first, then the others in the order of d.Gates; shadow
// gates are not listed (they limit nobody). A token bucket's policy adds
// its capacity as rlctl-burst=<n>: the draft lets a policy carry
// parameters it does not define and asks that they carry a vendor prefix
// (its own example is acme-burst), and q and w stay the sustained rate (q
// per w seconds). For a token bucket r is the whole tokens left and t the
// seconds until the bucket is full, 0 when it is; for the windows r is
// what is left and t the seconds until the window's count is back to
// zero. t and Retry-After are whole seconds rounded up, so a client that
// waits them never arrives early; Retry-After is at least 1, and is the
// earliest moment the call can pass (its missing tokens, the window's end,
// the sliding window's first moment with room). X-RateLimit-Reset is
// rounded up to the next whole second too. now is the time the decision
// was made (the Enforcer's clock: Enforcer.Now).
//
// A decision without gates (Limit 0) carries no rate headers, and neither
// does a quarantine: it is an access decision, not a rate, and a client must
// not read it as "retry later". A fail-closed denial carries Retry-After
// only. A decision of the degraded mode adds X-RateLimit-Degraded: 1 (and
// its limits are this replica's share).
func SetHeaders(h http.Header, d enforce.Decision, now time.Time) {
	for _, k := range canonicalHeaders {
		delete(h, k)
	}
	if d.Reason == enforce.ReasonQuarantined {
		return
	}
	var hs headerSet
	hs.buf = make([]byte, 0, 256)
	if d.Degraded {
		hs.buf = append(hs.buf, '1')
		hs.end(canonDegraded)
	}
	if !d.Allowed {
		wait := d.RetryAfter
		if wait <= 0 && d.Limit > 0 {
			wait = d.Reset.Sub(now)
		}
		hs.buf = strconv.AppendInt(hs.buf, max(ceilSeconds(wait), 1), 10)
		hs.end(canonRetryAfter)
		if d.Reason == enforce.ReasonLockedOut {
			hs.buf = strconv.AppendInt(hs.buf, max(ceilSeconds(d.LockoutRemaining), 1), 10)
			hs.end(canonLockoutRemaining)
		}
	}
	if d.Limit > 0 {
		remaining := max(d.Remaining, 0)
		hs.buf = strconv.AppendInt(hs.buf, d.Limit, 10)
		hs.end(canonLimit)
		hs.buf = strconv.AppendInt(hs.buf, remaining, 10)
		hs.end(canonRemaining)
		reset := d.Reset.Unix()
		if d.Reset.Nanosecond() != 0 {
			reset++
		}
		hs.buf = strconv.AppendInt(hs.buf, reset, 10)
		hs.end(canonReset)

		name := "rlctl"
		head, index, ok := d.Headline(now)
		if ok {
			name = head.DefinitionID
			hs.buf = appendPolicy(hs.buf, head)
			for i, g := range d.Gates {
				if g.Shadow || i == index {
					continue
				}
				hs.buf = append(hs.buf, ", "...)
				hs.buf = appendPolicy(hs.buf, g)
			}
		} else {
			hs.buf = appendSFString(hs.buf, name)
			hs.buf = append(hs.buf, ";q="...)
			hs.buf = strconv.AppendInt(hs.buf, d.Limit, 10)
		}
		hs.end(canonPolicy)
		hs.buf = appendSFString(hs.buf, name)
		hs.buf = append(hs.buf, ";r="...)
		hs.buf = strconv.AppendInt(hs.buf, remaining, 10)
		hs.buf = append(hs.buf, ";t="...)
		hs.buf = strconv.AppendInt(hs.buf, max(ceilSeconds(d.Reset.Sub(now)), 0), 10)
		hs.end(canonRateLimit)
	}
	hs.into(h)
}

// headerSet gathers a decision's header values in one buffer: a gateway
// sets them on every answer, and one string and one slice for all of
// them are two allocations instead of two per header.
type headerSet struct {
	buf  []byte
	keys [8]string // canonical
	ends [8]int    // where each value ends in buf
	n    int
}

// end closes the value written since the last end as key's.
func (s *headerSet) end(key string) {
	s.keys[s.n], s.ends[s.n] = key, len(s.buf)
	s.n++
}

func (s *headerSet) into(h http.Header) {
	if s.n == 0 {
		return
	}
	all := string(s.buf)
	vals := make([]string, s.n)
	start := 0
	for i := range s.n {
		vals[i] = all[start:s.ends[i]]
		h[s.keys[i]] = vals[i : i+1 : i+1]
		start = s.ends[i]
	}
}

// The headers SetHeaders sets, in the form http.Header keys them by, so
// that neither setting nor deleting them canonicalizes per call.
var (
	canonLimit            = textproto.CanonicalMIMEHeaderKey(HeaderLimit)
	canonRemaining        = textproto.CanonicalMIMEHeaderKey(HeaderRemaining)
	canonReset            = textproto.CanonicalMIMEHeaderKey(HeaderReset)
	canonPolicy           = textproto.CanonicalMIMEHeaderKey(HeaderPolicy)
	canonRateLimit        = textproto.CanonicalMIMEHeaderKey(HeaderRateLimit)
	canonRetryAfter       = textproto.CanonicalMIMEHeaderKey(HeaderRetryAfter)
	canonLockoutRemaining = textproto.CanonicalMIMEHeaderKey(HeaderLockoutRemaining)
	canonDegraded         = textproto.CanonicalMIMEHeaderKey(HeaderDegraded)
	canonicalHeaders      = []string{canonLimit, canonRemaining, canonReset, canonPolicy, canonRateLimit, canonRetryAfter, canonLockoutRemaining, canonDegraded}
)

// appendPolicy appends one member of RateLimit-Policy for g.
func appendPolicy(b []byte, g enforce.Gate) []byte {
	b = appendSFString(b, g.DefinitionID)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, g.Limit, 10)
	if g.WindowSeconds > 0 {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, int64(g.WindowSeconds), 10)
	}
	if g.Algorithm == enforce.AlgorithmTokenBucket && g.Burst > 0 {
		b = append(b, ";rlctl-burst="...)
		b = strconv.AppendInt(b, g.Burst, 10)
	}
	return b
}

// ceilSeconds rounds d up to whole seconds.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return int64(d / time.Second)
	}
	return int64((d + time.Second - 1) / time.Second)
}

// appendSFString appends s as a structured-field string (RFC 8941
// section 3.3.3): quoted, with '"' and '\' escaped. Bytes a header cannot
// carry (outside printable ASCII) become '?'; definition ids are ASCII in
// practice, so this only guards the header against odd names.
func appendSFString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
