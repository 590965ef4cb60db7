package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"time"
)

type requestIDKey struct{}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// validRequestID accepts a caller's X-Request-ID only when it is short and
// plain, so it can go into logs and the audit log as is.
var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func newRequestID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush lets streamed lists reach the client as they are written.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
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
		ctx := context.WithValue(r.Context(), requestIDKey{}, id)
		var retryAfter time.Duration
		ctx = context.WithValue(ctx, retryAfterKey{}, &retryAfter)
		// authenticate fills this in on the request it passes on, which
		// this middleware never sees: the holder carries the name back.
		actor := &actorHolder{}
		ctx = context.WithValue(ctx, actorHolderKey{}, actor)
		r = r.WithContext(ctx)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic serving request", "request_id", id, "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				if rec.status == 0 {
					s.writeProblem(rec, r, fmt.Errorf("panic: %v", v))
				}
			}
			elapsed := s.now().Sub(start)
			route := r.Pattern
			if route == "" {
				route = "unmatched"
			}
			s.metrics.observe(route, r.Method, rec.status, elapsed)
			s.log.Info("request", "request_id", id, "method", r.Method, "route", route, "status", rec.status,
				"duration_ms", float64(elapsed.Microseconds())/1000, "actor", actor.name)
		}()
		next.ServeHTTP(&retryAfterWriter{statusRecorder: rec, retryAfter: &retryAfter}, r)
	})
}

// retryAfterWriter adds Retry-After when writeProblem asked for it.
type retryAfterWriter struct {
	*statusRecorder
	retryAfter *time.Duration
}

func (w *retryAfterWriter) WriteHeader(code int) {
	if *w.retryAfter > 0 {
		writeRetryAfter(w.statusRecorder, *w.retryAfter)
	}
	w.statusRecorder.WriteHeader(code)
}
