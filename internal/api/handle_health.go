package api

import (
	"context"
	"net/http"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
)

// handleHealthz answers while the process serves: liveness only.
func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
}

// handleReadyz answers 200 only when the database answers and its schema is
// current, so a load balancer never routes to a replica that cannot serve.
func (s *Server) handleReadyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		st, err := migrate.Status(ctx, s.store.Pool())
		switch {
		case err != nil:
			s.log.Warn("readiness check failed", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("database unavailable\n"))
		case st.Behind():
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("database schema is behind: run rlapi migrate\n"))
		default:
			_, _ = w.Write([]byte("ready\n"))
		}
	})
}
