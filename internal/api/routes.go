package api

import "net/http"

// Handler returns every route of the API, in one place.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", handleHealthz())
	mux.Handle("GET /readyz", s.handleReadyz())
	return mux
}
