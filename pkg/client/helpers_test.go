package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// sleeps records the waits the client asked for instead of waiting.
type sleeps struct {
	mu sync.Mutex
	ds []time.Duration
	// onSleep, when set, runs before the (skipped) wait; tests use it to
	// cancel the context mid-retry.
	onSleep func()
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	hook := s.onSleep
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

// newTestClient starts a real listener serving h and returns a client for
// it whose retries never really sleep and whose backoff has no jitter.
func newTestClient(t *testing.T, h http.Handler, opts Options) (*Client, *sleeps, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, s := newClientFor(t, srv.URL, opts)
	return c, s, srv
}

func newClientFor(t *testing.T, baseURL string, opts Options) (*Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	if opts.sleep == nil {
		opts.sleep = s.sleep
	}
	if opts.jitter == nil {
		opts.jitter = func(d time.Duration) time.Duration { return d }
	}
	c, err := New(baseURL, opts)
	if err != nil {
		t.Fatalf("New(%q): %v", baseURL, err)
	}
	return c, s
}

func writeJSON(t *testing.T, w http.ResponseWriter, status int, v any) {
	t.Helper()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		t.Errorf("encode response: %v", err)
	}
}

func writeProblem(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":   "https://rlctl.dev/problems/test",
		"title":  http.StatusText(status),
		"status": status,
		"detail": detail,
	})
}

// counter counts requests safely across handler goroutines.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func ptr[T any](v T) *T { return &v }
