package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/wire"
)

// Failed-credential throttling for gateways (docs/api.md, "Failed
// credentials"): POST /api/auth-events reports an authentication the
// gateway made, GET /api/auth-lockout asks whether an address is locked
// before the gateway verifies its credentials. Both need an enforcer (or
// admin) token; the count and the lockout are the gateways' throttle's
// (Opts.AuthThrottle, pkg/auththrottle, the Enforcer's guard), shared by
// every replica. POST /api/check and GET /api/validate refuse a locked
// address on their own.

func (s *Server) authStatusOf(w http.ResponseWriter, ip string, st auththrottle.Status) wire.AuthStatus {
	res := wire.AuthStatus{ClientIP: ip, Locked: st.Locked, Started: st.Started}
	if t := s.gatewayThrottle; t != nil {
		res.Address = t.Key(netip.MustParseAddr(ip))
	}
	if st.Locked {
		res.RetryAfter = max(int64((st.RetryAfter+time.Second-1)/time.Second), 1)
		w.Header().Set(httpgate.HeaderRetryAfter, strconv.FormatInt(res.RetryAfter, 10))
	}
	w.Header().Set("Cache-Control", "no-store")
	return res
}

// errAuthUnknown answers a report or check the counter store could not
// take: the gateway applies its own policy.
func errAuthUnknown(err error) error {
	he := errorf(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
		fmt.Sprintf("the failed-credential count cannot be read or written right now (%v); retry shortly", errors.Unwrap(err)))
	he.retryAfter = time.Second
	return he
}

func (s *Server) handleReportAuth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.enforcer == nil {
			s.writeProblem(w, r, errNoEnforcer)
			return
		}
		req, err := decode[wire.AuthEvent](w, r, false)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		rep, err := auththrottle.NormalizeReport(auththrottle.Report{ClientIP: req.ClientIP, Identity: req.Identity, Outcome: auththrottle.Outcome(req.Outcome)})
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var st auththrottle.Status
		if s.gatewayThrottle != nil {
			st, err = s.gatewayThrottle.ReportAuth(r.Context(), rep)
		}
		if err != nil {
			s.writeProblem(w, r, errAuthUnknown(err))
			return
		}
		encode(w, http.StatusOK, s.authStatusOf(w, rep.ClientIP, st))
	})
}

func (s *Server) handleAuthLockout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.enforcer == nil {
			s.writeProblem(w, r, errNoEnforcer)
			return
		}
		// routes.go declares client_ip the only parameter.
		rep, err := auththrottle.NormalizeReport(auththrottle.Report{ClientIP: r.URL.Query().Get("client_ip"), Outcome: auththrottle.Expired})
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var st auththrottle.Status
		if s.gatewayThrottle != nil {
			st, err = s.gatewayThrottle.Locked(r.Context(), rep.ClientIP)
		}
		if err != nil {
			s.writeProblem(w, r, errAuthUnknown(err))
			return
		}
		encode(w, http.StatusOK, s.authStatusOf(w, rep.ClientIP, st))
	})
}
