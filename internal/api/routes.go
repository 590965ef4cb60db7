package api

import (
	"context"
	"net/http"
)

// Handler returns every route of the API, in one place. Ids are the rest of
// the path ({id...}) so both percent-encoded ids and the reference's raw
// ids with '/' in them reach the handler whole.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, p permission, h http.Handler) {
		h = s.checkInput(pattern, h)
		// POST /api/check bounds its own work: the token lookup and each
		// counter round trip of the decision within the backend timeout
		// (verifyToken, enforce.Options.BackendTimeout). A request
		// deadline on top would bound nothing more and cost a timer for
		// every call a gateway decides.
		if pattern != checkRoute {
			h = s.withTimeout(h)
		}
		mux.Handle(pattern, s.authenticate(p, h))
	}

	route("GET /healthz", permPublic, handleHealthz())
	route("GET /readyz", permPublic, s.handleReadyz())
	route("GET /api/version", permPublic, s.handleVersion())
	route("GET /api/openapi.json", permRead, s.handleOpenAPI())
	route("GET /metrics", permRead, s.metrics.handler())

	route("GET /api/rate-limits", permRead, s.handleListDefinitions())
	route("GET /api/rate-limits/{id...}", permRead, s.handleGetDefinition())
	route("PUT /api/rate-limits/{id...}", permWrite, s.handlePutDefinition())
	route("DELETE /api/rate-limits/{id...}", permWrite, s.handleDeleteDefinition())
	route("POST /api/rate-limits-enabled/{id...}", permWrite, s.handleSetEnabled())
	route("GET /api/rate-limits-status", permRead, s.handleStatus())

	route("GET /api/rate-limit-memberships", permRead, s.handleListMemberships())
	route("GET /api/rate-limit-memberships/{id...}", permRead, s.handleGetMembership())
	route("PUT /api/rate-limit-memberships/{id...}", permWrite, s.handlePutMembership())
	route("DELETE /api/rate-limit-memberships/{id...}", permWrite, s.handleDeleteMembership())

	route("GET /api/rate-limit-quarantine", permRead, s.handleListQuarantine())
	route("POST /api/rate-limit-quarantine/{id...}", permWrite, s.handleQuarantine())
	route("DELETE /api/rate-limit-quarantine/{id...}", permWrite, s.handleUnquarantine())

	route("GET /api/rate-limit-admins", permRead, s.handleListAdmins())
	route("PUT /api/rate-limit-admins/{id...}", permWrite, s.handlePutAdmin())
	route("DELETE /api/rate-limit-admins/{id...}", permWrite, s.handleDeleteAdmin())

	route("GET /api/tokens", permWrite, s.handleListTokens())
	route("POST /api/tokens", permWrite, s.handleCreateToken())
	route("DELETE /api/tokens/{name...}", permWrite, s.handleRevokeToken())

	route("GET /api/enforcement", permRead, s.handleGetEnforcement())
	route("PUT /api/enforcement", permWrite, s.handlePutEnforcement())

	route("GET /api/audit", permRead, s.handleListAudit())
	route("GET /api/rate-limit-events", permRead, s.handleListEvents())
	route("POST /api/check", permDecide, s.handleCheck())      // checkRoute
	route("GET /api/validate", permPublic, s.handleValidate()) // trusted proxy + X-Gateway-Secret, checked in the handler
	route("POST /api/auth-events", permDecide, s.handleReportAuth())
	route("GET /api/auth-lockout", permDecide, s.handleAuthLockout())
	route("GET /api/rate-limit-counters", permRead, s.handleListCounters())
	route("DELETE /api/rate-limit-counters", permWrite, s.handleResetCounters())
	route("POST /api/apply", permWrite, s.handleApply())

	// Anything else under /api is a problem+json 404, not the mux's text.
	route("/api/", permPublic, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeProblem(w, r, errorf(http.StatusNotFound, "not-found", "Not found", "no route for "+r.Method+" "+r.URL.Path))
	}))
	return s.observe(mux)
}

// checkRoute is the decision route gateways call for every request.
const checkRoute = "POST /api/check"

// withTimeout bounds a request's work, so a stuck database answers 503
// instead of holding the connection.
func (s *Server) withTimeout(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
