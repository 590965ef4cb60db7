package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// requestState is what observe and the middlewares and handlers inside it
// share about one request, in one context value and one allocation (POST
// /api/check passes through here for every call a gateway decides): the
// writer handlers get, which remembers the status for the access log and
// adds the Retry-After writeProblem asked for; the request id; and the
// token authenticate verified.
type requestState struct {
	http.ResponseWriter
	status     int
	id         string
	retryAfter time.Duration
	token      *ratelimit.Token // nil before authentication
}

type requestStateKey struct{}

// stateOf is the request's state; nil outside observe (tests that call a
// handler directly).
func stateOf(ctx context.Context) *requestState {
	st, _ := ctx.Value(requestStateKey{}).(*requestState)
	return st
}

func requestID(ctx context.Context) string {
	if st := stateOf(ctx); st != nil {
		return st.id
	}
	return ""
}

func (w *requestState) WriteHeader(code int) {
	if w.retryAfter > 0 {
		writeRetryAfter(w.ResponseWriter, w.retryAfter)
	}
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *requestState) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *requestState) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets streamed lists reach the client as they are written.
func (w *requestState) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// validRequestID accepts a caller's X-Request-ID only when it is short and
// plain, so it can go into logs and the audit log as is.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// observe is the outermost middleware: request id, recovery, access log and
// metrics, in that order, so even a panic is logged and counted with its id.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		id := r.Header.Get("X-Request-ID")
		if !validRequestID.MatchString(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		st := &requestState{ResponseWriter: w, id: id}
		r = r.WithContext(context.WithValue(r.Context(), requestStateKey{}, st))
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "request_id", id, "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				if st.status == 0 {
					s.writeProblem(st, r, fmt.Errorf("panic: %v", v))
				}
			}
			elapsed := s.now().Sub(start)
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			s.metrics.observe(route, r.Method, st.status, elapsed)
			// Checked first: the arguments would be built (and allocated)
			// for a line the level then drops.
			if level, ok := s.accessLevel(r.Method, route, st.status); ok && s.log.Enabled(r.Context(), level) {
				actor := ""
				if st.token != nil {
					actor = st.token.Name
				}
				s.log.Log(r.Context(), level, "request", "request_id", id, "method", r.Method, "route", route, "status", st.status,
					"duration_ms", float64(elapsed.Microseconds())/1000, "actor", actor)
			}
		}()
		next.ServeHTTP(st, r)
	})
}

// accessLevel is the level of a request's access log line; false for no
// line. The decision routes write none unless Config.AccessLogDecisions
// says so (then at INFO): a gateway calls them for every request it
// decides, so they were a line per decision, and the metrics already count
// them by route and status. A read answered without error is DEBUG: the
// dashboard and rlctl events follow poll every 2 s, and a successful read
// changes nothing an operator must see. Writes and every 4xx or 5xx are
// INFO.
func (s *Server) accessLevel(method, route string, status int) (slog.Level, bool) {
	switch {
	case isDecisionRoute(route):
		return slog.LevelInfo, s.cfg.AccessLogDecisions
	case (method == http.MethodGet || method == http.MethodHead) && status < 400:
		return slog.LevelDebug, true
	}
	return slog.LevelInfo, true
}
