package httpgate

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
)

// MiddlewareOptions tune Middleware; the zero value is ready to use.
type MiddlewareOptions struct {
	// OnDecision, when set, is called for every data-plane request once it
	// is decided, before the response is written: for metrics, access logs
	// or audit. err is what Check returned (non-nil only when a backend
	// failure decided the call). It runs on the request's goroutine and
	// must not write to the response.
	OnDecision func(r *http.Request, c enforce.Call, d enforce.Decision, err error)
	// ErrorLog receives the backend failures that decided a call by the
	// fail policy (nil: they are not logged here; the Enforcer's own
	// Logger still sees them).
	ErrorLog *slog.Logger
	// ClientIPs, when set, gives a call its ClientIP (when classify left
	// it empty): the request's client address as the resolver finds it
	// from the peer and the trusted proxies' forwarding header
	// (clientip.New(trustedProxies, header)). Anonymous calls are then
	// limited by client address (Call.ClientIP) and network quarantine
	// applies; the IPv6 key prefix is the Enforcer's
	// (enforce.Options.IPv6Prefix).
	ClientIPs *clientip.Resolver
	// TeamHeader, when set, names the request header that carries the
	// call's team (Call.Team) when classify left it empty, for example
	// "X-Auth-Team" set by the gateway's authentication from a token
	// claim. The gateway must set or remove that header on every request:
	// a team a client could name itself would let it pick whose team
	// quota it spends (docs/nginx.md, "Teams").
	TeamHeader string
}

// Middleware enforces e on the requests classify recognizes as data-plane
// calls. The Call gets the request's method and path (unless classify set
// them), so route definitions apply to it: classify may return ok=true
// with no target for a request that only routes limit. classify maps a
// request to its Call (the caller from the gateway's authentication, the
// target from the route) and returns ok=false for anything that is not a
// data-plane call (health checks, the control plane, static files): those
// pass untouched, decided by nobody.
//
// A data-plane request is answered:
//
//   - allowed (fail-open included): by next, the response carrying the
//     rate-limit headers of SetHeaders;
//   - throttled: 429 with the rate-limit headers, Retry-After and a small
//     application/problem+json body; next is not called;
//   - quarantined: 403 with a problem body and no rate-limit headers (an
//     access decision: retrying will not help);
//   - locked out by an escalation lockout (pkg/enforce/escalation):
//     429 with Retry-After and X-Lockout-Remaining;
//   - locked out for failed authentications (pkg/auththrottle, the
//     Enforcer's Options.Guard):
//     429 with Retry-After and a problem body, before classify's
//     credentials matter (see AuthMiddleware to refuse before verifying
//     them);
//   - fail-closed (the counter store failed and policy says deny): 503
//     with Retry-After.
//
// Each request is one Check: allowed calls consume their cost, denied ones
// nothing.
func Middleware(e *enforce.Enforcer, classify func(*http.Request) (enforce.Call, bool), opts MiddlewareOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c, ok := classify(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			// Routes: the request's own method and path, unless classify
			// named them.
			if c.Method == "" {
				c.Method = r.Method
			}
			if c.Path == "" {
				c.Path = r.URL.EscapedPath()
			}
			if c.ClientIP == "" && opts.ClientIPs != nil {
				if a := opts.ClientIPs.FromRequest(r); a.IsValid() {
					c.ClientIP = a.String()
				}
			}
			if c.Team == "" && opts.TeamHeader != "" {
				c.Team = r.Header.Get(opts.TeamHeader)
			}
			if c.Team != "" {
				c.Team, _ = enforce.NormalizeTeam(c.Team)
			}
			d, err := e.Check(r.Context(), c)
			if err != nil && opts.ErrorLog != nil {
				opts.ErrorLog.Warn("rate-limit decision fell back to the fail policy", "reason", d.Reason,
					"method", r.Method, "path", r.URL.Path, "target_type", c.TargetType, "target", c.TargetName, "err", err)
			}
			if opts.OnDecision != nil {
				opts.OnDecision(r, c, d, err)
			}
			SetHeaders(w.Header(), d, e.Now())
			switch {
			case d.Allowed:
				next.ServeHTTP(w, r)
			case d.Reason == enforce.ReasonQuarantined:
				writeDenial(w, http.StatusForbidden, "quarantined", "Forbidden",
					"access is suspended (quarantined "+d.QuarantineScope+")")
			case d.Reason == enforce.ReasonLockedOut:
				writeDenial(w, http.StatusTooManyRequests, "locked-out", "Locked out",
					"locked out after repeated rate-limit violations; retry after "+w.Header().Get(HeaderRetryAfter)+"s")
			case d.Reason == enforce.ReasonAuthLocked:
				writeDenial(w, http.StatusTooManyRequests, "too-many-auth-failures", "Too many failed authentications",
					authLockedDetail(d.RetryAfter))
			case d.Reason == enforce.ReasonOverloaded:
				writeDenial(w, http.StatusServiceUnavailable, "overloaded", "Service unavailable",
					"too many decisions are waiting for the rate-limit store; retry after "+w.Header().Get(HeaderRetryAfter)+"s")
			case d.Reason == enforce.ReasonFailClosed:
				writeDenial(w, http.StatusServiceUnavailable, "rate-limit-unavailable", "Service unavailable",
					"rate limits cannot be checked right now; retry after "+w.Header().Get(HeaderRetryAfter)+"s")
			default:
				writeDenial(w, http.StatusTooManyRequests, "throttled", "Too many requests",
					"rate limit of "+strconv.FormatInt(d.Limit, 10)+" exceeded; retry after "+w.Header().Get(HeaderRetryAfter)+"s")
			}
		})
	}
}

// problemBase prefixes the problem types, as rlapi's do.
const problemBase = "https://rlctl.dev/problems/"

// writeDenial writes a small RFC 9457 problem document.
func writeDenial(w http.ResponseWriter, status int, kind, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}{problemBase + kind, title, status, detail})
}

// AuthMiddleware refuses requests from addresses locked out for failed
// authentications (th, the throttle the Enforcer was built with as its
// Options.Guard, which counts and logs them), before next (the gateway's
// authentication, then Middleware) sees them: 429 with Retry-After and a
// problem body. The client address is resolver's (nil: the peer's).
// Requests whose address is unknown, or whose lockout the counter store
// cannot say, and every request when th is nil, pass. The gateway reports each authentication with the
// throttle's ReportAuth.
func AuthMiddleware(th *auththrottle.Throttle, resolver *clientip.Resolver) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if th == nil {
				next.ServeHTTP(w, r)
				return
			}
			a := clientip.Peer(r)
			if resolver != nil {
				a = resolver.FromRequest(r)
			}
			if st, err := th.CheckRequest(r.Context(), a, r.URL.Path); err == nil && st.Locked {
				w.Header().Set(HeaderRetryAfter, strconv.FormatInt(max(ceilSeconds(st.RetryAfter), 1), 10))
				writeDenial(w, http.StatusTooManyRequests, "too-many-auth-failures", "Too many failed authentications",
					authLockedDetail(st.RetryAfter))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// authLockedDetail is the problem detail of a locked-out address.
func authLockedDetail(retry time.Duration) string {
	return "too many failed authentications from this address; retry after " + strconv.FormatInt(max(ceilSeconds(retry), 1), 10) + "s"
}
