package api

import (
	"context"
	"net/http"
)

// routeSpec is one route: its pattern, who may call it, the query
// parameters it accepts (anything else is a 400 before the handler runs)
// and its handler.
type routeSpec struct {
	pattern string
	perm    permission
	query   []queryParam
	handler http.Handler
}

// routes lists every route of the API, in one place. Ids are the rest of
// the path ({id...}) so both percent-encoded ids and the reference's raw
// ids with '/' in them reach the handler whole.
func (s *Server) routes() []routeSpec {
	return []routeSpec{
		{"GET /healthz", permPublic, query(), handleHealthz()},
		{"GET /readyz", permPublic, query(), s.handleReadyz()},
		{"GET /api/version", permPublic, query(), s.handleVersion()},
		{"GET /api/server", permRead, query(), s.handleServer()},
		{"GET /api/openapi.json", permRead, query(), s.handleOpenAPI()},
		{"GET /metrics", permRead, query(), s.metrics.handler()},

		{"GET /api/rate-limits", permRead, definitionListParams, s.handleListDefinitions()},
		{"GET /api/rate-limits/{id...}", permRead, query(), s.handleGetDefinition()},
		{"PUT /api/rate-limits/{id...}", permWrite, query(dryRunParam), s.handlePutDefinition()},
		{"DELETE /api/rate-limits/{id...}", permWrite, query(dryRunParam), s.handleDeleteDefinition()},
		{"POST /api/rate-limits-enabled/{id...}", permWrite, query(boolParam("enabled"), dryRunParam), s.handleSetEnabled()},
		{"GET /api/rate-limits-status", permRead, statusParams, s.handleStatus()},

		{"GET /api/rate-limit-memberships", permRead, membershipListParams, s.handleListMemberships()},
		{"GET /api/rate-limit-memberships/{id...}", permRead, query(), s.handleGetMembership()},
		{"PUT /api/rate-limit-memberships/{id...}", permWrite, query(dryRunParam), s.handlePutMembership()},
		{"DELETE /api/rate-limit-memberships/{id...}", permWrite, query(dryRunParam), s.handleDeleteMembership()},

		{"GET /api/rate-limit-quarantine", permRead, query(), s.handleListQuarantine()},
		{"POST /api/rate-limit-quarantine/{id...}", permWrite, query(dryRunParam), s.handleQuarantine()},
		{"DELETE /api/rate-limit-quarantine/{id...}", permWrite, query(dryRunParam), s.handleUnquarantine()},

		{"GET /api/rate-limit-admins", permRead, query(), s.handleListAdmins()},
		{"PUT /api/rate-limit-admins/{id...}", permWrite, query(dryRunParam), s.handlePutAdmin()},
		{"DELETE /api/rate-limit-admins/{id...}", permWrite, query(dryRunParam), s.handleDeleteAdmin()},

		{"GET /api/tokens", permWrite, query(), s.handleListTokens()},
		{"POST /api/tokens", permWrite, query(dryRunParam), s.handleCreateToken()},
		{"DELETE /api/tokens/{name...}", permWrite, query(dryRunParam), s.handleRevokeToken()},

		{"GET /api/enforcement", permRead, query(), s.handleGetEnforcement()},
		{"PUT /api/enforcement", permWrite, query(dryRunParam), s.handlePutEnforcement()},

		{"GET /api/audit", permRead, auditParams, s.handleListAudit()},
		{"GET /api/rate-limit-events", permRead, eventParams, s.handleListEvents()},
		{checkRoute, permDecide, query(), s.handleCheck()},
		// trusted proxy + X-Gateway-Secret, checked in the handler
		{"GET /api/validate", permPublic, query(), s.handleValidate()},
		{"POST /api/auth-events", permDecide, query(), s.handleReportAuth()},
		{"GET /api/auth-lockout", permDecide, query(textParam("client_ip")), s.handleAuthLockout()},
		{"GET /api/auth-lockouts", permRead, query(), s.handleListAuthLockouts()},
		{"DELETE /api/auth-lockouts/{address...}", permWrite, query(dryRunParam, enumParam("scope", authScopeRlapi, authScopeGateway)), s.handleLiftAuthLockout()},
		{"GET /api/rate-limit-counters", permRead, append(query(limitParam), counterSelectorParams...), s.handleListCounters()},
		{"DELETE /api/rate-limit-counters", permWrite, append(query(dryRunParam), counterSelectorParams...), s.handleResetCounters()},
		{"POST /api/apply", permWrite, query(dryRunParam, boolParam("quarantine")), s.handleApply()},
	}
}

// Handler returns the handler of every route.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		h := s.checkInput(rt.pattern, rt.query, rt.handler)
		// POST /api/check bounds its own work: the token lookup and each
		// counter round trip of the decision within the backend timeout
		// (verifyToken, enforce.Options.BackendTimeout). A request
		// deadline on top would bound nothing more and cost a timer for
		// every call a gateway decides.
		if rt.pattern != checkRoute {
			h = s.withTimeout(h)
		}
		mux.Handle(rt.pattern, s.authenticate(rt.perm, h))
	}
	// Anything else under /api is a problem+json 404, not the mux's text,
	// whatever its query.
	mux.Handle("/api/", s.authenticate(permPublic, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, errorf(http.StatusNotFound, "not-found", "Not found", "no route for "+r.Method+" "+r.URL.Path))
	})))
	return s.observe(mux)
}

// checkRoute is the decision route gateways call for every request.
const checkRoute = "POST /api/check"

// isDecisionRoute reports whether route is one gateways call for every
// request they decide or every authentication they make: POST /api/check,
// GET /api/validate (nginx auth_request), POST /api/auth-events and GET
// /api/auth-lockout, the routes an enforcer token calls.
func isDecisionRoute(route string) bool {
	switch route {
	case checkRoute, "GET /api/validate", "POST /api/auth-events", "GET /api/auth-lockout":
		return true
	}
	return false
}

// withTimeout bounds a request's work, so a stuck database answers 503
// instead of holding the connection.
func (s *Server) withTimeout(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
