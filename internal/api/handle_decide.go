package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// The decision endpoints: POST /api/check for gateways that call rlapi as a
// service (the enforcer token role), and GET /api/validate for nginx's
// auth_request (docs/nginx.md).

func newCheckResult(d enforce.Decision) wire.CheckResult {
	res := wire.CheckResult{Allowed: d.Allowed, Reason: d.Reason, Limit: d.Limit, Remaining: d.Remaining,
		Reset: unixOrZero(d.Reset), QuarantineScope: d.QuarantineScope, Degraded: d.Degraded, Gates: make([]wire.CheckGate, 0, len(d.Gates))}
	if !d.Allowed && d.Reason != enforce.ReasonQuarantined {
		res.RetryAfter = max(int64((d.RetryAfter+time.Second-1)/time.Second), 1)
	}
	if d.Reason == enforce.ReasonLockedOut {
		res.LockoutRemaining = max(int64((d.LockoutRemaining+time.Second-1)/time.Second), 1)
	}
	for _, g := range d.Gates {
		res.Gates = append(res.Gates, wire.CheckGate{DefinitionID: g.DefinitionID, Axis: g.Axis, EntityType: g.EntityType,
			WindowSeconds: g.WindowSeconds, Limit: g.Limit, Count: g.Count, Remaining: g.Remaining,
			Reset: unixOrZero(g.Reset), Shadow: g.Shadow, MatchedBy: g.MatchedBy,
			Overrides: g.Overrides, Matched: g.Matched, Dimension: g.Dimension})
	}
	return res
}

// unixOrZero is t in epoch seconds, rounded up as X-RateLimit-Reset is
// (httpgate.SetHeaders): a token bucket is full between seconds, and a
// client that waits until the second given never arrives before it.
func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	if t.Nanosecond() != 0 {
		return t.Unix() + 1
	}
	return t.Unix()
}

var errNoEnforcer = errorf(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
	"this rlapi serves the management API only: it has no enforcer to decide calls")

// handleCheck decides one call and takes its cost when it passes. Every
// decision is a 200 (allowed or not, the decision is the data); the
// rate-limit headers come along as on a gateway's own response.
func (s *Server) handleCheck() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.enforcer == nil {
			s.writeProblem(w, r, errNoEnforcer)
			return
		}
		// The body is enforce.Call on the wire; Normalize is its one
		// validation (a *enforce.CallError is a 400 naming the fields).
		body, err := readBody(w, r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		req, err := decodeBody[enforce.Call](body, false)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		c, err := req.Normalize()
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		// A decision the fail policy made is counted and logged (in
		// aggregate, never per call) by the Enforcer.
		d, _ := s.enforcer.Check(r.Context(), c)
		if d.Reason == enforce.ReasonOverloaded {
			s.writeProblem(w, r, errOverloaded())
			return
		}
		httpgate.SetHeaders(w.Header(), d, s.now())
		w.Header()["Cache-Control"] = noStore
		encode(w, http.StatusOK, newCheckResult(d))
	})
}

// noStore is the answer's Cache-Control, set without canonicalizing its
// name on every call (it is canonical).
var noStore = []string{"no-store"}

// Headers of the auth_request contract (docs/nginx.md).
const (
	headerGatewaySecret = "X-Gateway-Secret"
	headerOriginalURI   = "X-Original-URI"
	// headerOriginalMethod is the client's request method (nginx:
	// $request_method): route definitions naming methods need it.
	headerOriginalMethod = "X-Original-Method"
	// headerToolName and headerToolKind are the MCP tool (or A2A skill)
	// and the kind of call, for a gateway that reads them from the
	// request (docs/nginx.md): tool limits apply only where they are sent.
	headerToolName     = "X-Tool-Name"
	headerToolKind     = "X-Tool-Kind"
	headerAuthUsername = "X-Auth-Username"
	headerAuthClientID = "X-Auth-Client-Id"
	headerAuthAdmin    = "X-Auth-Admin"
	// headerAuthTeam names the call's team (tenant), set by the gateway
	// from its authentication (a token claim), never from the client.
	headerAuthTeam = "X-Auth-Team"
	// headerThrottled marks a 403 that is a throttle, for nginx to turn
	// into a 429.
	headerThrottled = "X-RateLimit-Throttled"
	// headerUnavailable marks a 403 that is a fail-closed denial, for
	// nginx to turn into a 503.
	headerUnavailable = "X-RateLimit-Unavailable"
)

// errOverloaded answers a decision shed unmade (enforce.ReasonOverloaded):
// 503 with Retry-After, never the fail policy's answer.
func errOverloaded() *httpError {
	he := errorf(http.StatusServiceUnavailable, "overloaded", "Overloaded",
		"this replica has more decisions waiting than its counter store can answer in time; retry shortly")
	he.retryAfter = time.Second
	return he
}

// handleValidate is nginx's auth_request target. It answers only trusted
// proxies that present the gateway secret (there is no bearer token: nginx
// sends the secret instead), takes the caller from X-Auth-* headers (set by
// the gateway's authentication, never by the client) and the target from
// X-Original-URI (httpgate.TargetFromURI).
//
// nginx's auth_request passes on only 2xx, 401 and 403; any other status
// becomes a 500 for the client. So every denial is a 403, told apart by a
// marker header the nginx configuration reads:
//
//   - allowed: 200 with the rate-limit headers;
//   - throttled: 403 with X-RateLimit-Throttled: 1, the rate-limit headers
//     and Retry-After (nginx answers 429);
//   - quarantined: a plain 403 without rate-limit headers (nginx answers
//     403);
//   - locked out for failed authentications (POST /api/auth-events): 403
//     with X-RateLimit-Throttled: 1 and Retry-After, no rate-limit
//     headers (nginx answers 429);
//   - fail-closed: 403 with X-RateLimit-Unavailable: 1 and Retry-After, no
//     throttled marker (nginx answers 503; a configuration that does not
//     read the marker answers 403, never a misleading 429);
//   - a disguised control-plane path (/%61pi/..., /API/...,
//     httpgate.ErrDisguisedControlPlane): a plain 403 (nginx answers 403).
//
// The path is normalized one way (httpgate.TargetFromURI: decoded once,
// backslashes as slashes, lower-cased, parameters and surrounding
// whitespace dropped). Bytes text cannot hold are kept percent-encoded in
// the name, so an odd path is decided like any other (the caller's limits
// apply) instead of being refused: a refusal other than 401 or 403 would
// reach the client as nginx's 500.
//
// Control-plane paths (/api/...) and paths without a target are always 200.
func (s *Server) handleValidate() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if !s.gatewayTrusted(w, r) {
			return
		}
		if s.enforcer == nil {
			s.writeProblem(w, r, errNoEnforcer)
			return
		}
		uri := r.Header.Get(headerOriginalURI)
		if uri == "" {
			// A configuration mistake: deciding without a target would
			// silently let everything through.
			s.writeProblem(w, r, badRequest("missing X-Original-URI: the gateway must send the client's request URI (nginx: proxy_set_header X-Original-URI $request_uri)"))
			return
		}
		targetType, targetName, err := s.cfg.Classifier.Classify(uri)
		if errors.Is(err, httpgate.ErrDisguisedControlPlane) {
			// A 403 is the one refusal nginx passes on (a 400 would reach
			// the client as a 500); without a marker it stays a 403.
			s.writeProblem(w, r, errorf(http.StatusForbidden, "disguised-control-plane", "Forbidden",
				"the path reaches the control plane (/api) only once decoded or normalized; write /api literally"))
			return
		}
		if targetType == "" && httpgate.IsControlPlane(uri) {
			w.WriteHeader(http.StatusOK)
			return
		}
		admin := r.Header.Get(headerAuthAdmin)
		c := enforce.Call{
			Username:   strings.TrimSpace(r.Header.Get(headerAuthUsername)),
			ClientID:   strings.TrimSpace(r.Header.Get(headerAuthClientID)),
			IsAdmin:    admin == "1" || strings.EqualFold(admin, "true"),
			TargetType: targetType,
			TargetName: targetName,
			Team:       strings.TrimSpace(r.Header.Get(headerAuthTeam)),
			// Routes: every path is matched against the route
			// definitions, with or without a target; a path no route
			// matches and without a target is allowed untouched, as
			// before routes existed.
			Path: enforce.RoutePath(uri),
		}
		// An unknown method matches only the routes naming no method (an
		// odd method must not be a 400, which nginx would turn into a 500).
		if m, ne := ratelimit.RouteMethod("method", r.Header.Get(headerOriginalMethod)); ne == nil {
			c.Method = m
		}
		// The tool and kind from the gateway. An unknown kind is dropped
		// (a 400 would reach the client as nginx's 500): the call is then
		// of kind tool, and the tool's own limits still apply.
		if targetType != "" {
			c.Tool = strings.TrimSpace(r.Header.Get(headerToolName))
			if k := strings.ToLower(strings.TrimSpace(r.Header.Get(headerToolKind))); slices.Contains(ratelimit.Kinds(), k) {
				c.Kind = k
			}
		}
		// The client's address, from the forwarding header nginx sets
		// (the peer is nginx, a trusted proxy). An address that is itself
		// a trusted proxy (no header, or none past the proxies) is no
		// client: anonymous calls would all share its bucket.
		if ip := s.clientIP(r); ip.IsValid() && !s.trusted(ip) {
			c.ClientIP = ip.String()
		}
		// ClassifyURI gives a known target type and there is no cost, so
		// only the target name can be refused; an odd path is decided like
		// any other, on the name as given. A decision the fail policy made
		// is counted and logged (in aggregate, never per call) by the
		// Enforcer.
		c, _ = c.Normalize()
		d, _ := s.enforcer.Check(r.Context(), c)
		httpgate.SetHeaders(w.Header(), d, s.now())
		switch {
		case d.Allowed:
			w.WriteHeader(http.StatusOK)
		case d.Reason == enforce.ReasonQuarantined:
			s.writeProblem(w, r, errorf(http.StatusForbidden, "quarantined", "Forbidden",
				"access is suspended (quarantined "+d.QuarantineScope+")"))
		case d.Reason == enforce.ReasonLockedOut:
			// Marked as a throttle: nginx answers 429 with Retry-After.
			w.Header().Set(headerThrottled, "1")
			s.writeProblem(w, r, errorf(http.StatusForbidden, "locked-out", "Locked out",
				fmt.Sprintf("locked out after repeated rate-limit violations; retry after %ss", w.Header().Get(httpgate.HeaderRetryAfter))))
		case d.Reason == enforce.ReasonAuthLocked:
			// Marked as a throttle: nginx answers 429 with Retry-After.
			w.Header().Set(headerThrottled, "1")
			s.writeProblem(w, r, errorf(http.StatusForbidden, "too-many-auth-failures", "Too many failed authentications",
				fmt.Sprintf("too many failed authentications from this address; retry after %ss", w.Header().Get(httpgate.HeaderRetryAfter))))
		case d.Reason == enforce.ReasonOverloaded:
			// Marked unavailable: nginx answers 503 with Retry-After, as
			// for a fail-closed limit (auth_request takes only 2xx, 401
			// and 403 from us).
			w.Header().Set(headerUnavailable, "1")
			s.writeProblem(w, r, errorf(http.StatusForbidden, "overloaded", "Overloaded",
				"this replica has more decisions waiting than its counter store can answer in time; retry shortly"))
		case d.Reason == enforce.ReasonFailClosed:
			w.Header().Set(headerUnavailable, "1")
			s.writeProblem(w, r, errorf(http.StatusForbidden, "rate-limit-unavailable", "Rate limits unavailable",
				"rate limits cannot be checked right now and policy is to deny; retry shortly"))
		default:
			w.Header().Set(headerThrottled, "1")
			s.writeProblem(w, r, errorf(http.StatusForbidden, "throttled", "Throttled",
				fmt.Sprintf("rate limit of %d exceeded; retry after %ss", d.Limit, w.Header().Get(httpgate.HeaderRetryAfter))))
		}
	})
}

// gatewayTrusted answers 401 (or 429) and returns false unless the peer is
// a trusted proxy presenting the gateway secret.
//
// Peers outside the trusted proxies count as failed authentications and are
// locked out like bad bearer tokens. A trusted peer with a wrong secret is
// refused and logged but never locked out: the lockout is per address, and
// locking out the gateway's address would refuse every call through it.
func (s *Server) gatewayTrusted(w http.ResponseWriter, r *http.Request) bool {
	peer := remoteAddr(r)
	refuse := func(detail string) bool {
		s.writeProblem(w, r, errorf(http.StatusUnauthorized, "unauthorized", "Unauthorized", detail))
		return false
	}
	if !s.trusted(peer) {
		if wait := s.authThrottle.lockedFor(r.Context(), peer); wait > 0 {
			he := errorf(http.StatusTooManyRequests, "too-many-auth-failures", "Too many failed authentications",
				fmt.Sprintf("too many failed authentications from this address; retry in %ds", int(wait.Seconds()+0.999)))
			he.retryAfter = wait
			s.writeProblem(w, r, he)
			return false
		}
		s.authThrottle.fail(r.Context(), peer)
		return refuse("GET /api/validate answers trusted proxies only (--trusted-proxies, RLAPI_TRUSTED_PROXIES)")
	}
	if s.cfg.GatewaySecret == "" {
		return refuse("rlapi has no gateway secret (--gateway-secret, RLAPI_GATEWAY_SECRET): GET /api/validate is off")
	}
	// Comparing digests keeps the comparison constant-time whatever the
	// lengths.
	got := sha256.Sum256([]byte(r.Header.Get(headerGatewaySecret)))
	want := sha256.Sum256([]byte(s.cfg.GatewaySecret))
	if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
		s.log.Warn("gateway refused: missing or wrong X-Gateway-Secret", "request_id", requestID(r.Context()), "peer", peer.String())
		return refuse("missing or wrong X-Gateway-Secret")
	}
	return true
}
