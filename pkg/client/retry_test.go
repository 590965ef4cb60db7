package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// flaky answers 503 to the first failures requests, then calls ok.
func flaky(calls *counter, failures int, ok http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if calls.inc() <= failures {
			writeProblem(w, http.StatusServiceUnavailable, "database unavailable")
			return
		}
		ok(w, r)
	}
}

func TestRetryGetOn503ThenSuccess(t *testing.T) {
	t.Parallel()
	var calls counter
	c, s, _ := newTestClient(t, flaky(&calls, 2, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(t, w, http.StatusOK, ratelimit.Definition{ID: "caller:group:devs:60", Axis: "caller", Version: 3})
	}), Options{})

	d, err := c.GetDefinition(context.Background(), "caller:group:devs:60")

	if err != nil {
		t.Fatalf("GetDefinition: %v", err)
	}
	if d.Version != 3 {
		t.Errorf("Version = %d, want 3", d.Version)
	}
	if calls.get() != 3 {
		t.Errorf("server saw %d requests, want 3", calls.get())
	}
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}; !slices.Equal(s.got(), want) {
		t.Errorf("backoff = %v, want %v", s.got(), want)
	}
}

func TestRetryPutResendsBody(t *testing.T) {
	t.Parallel()
	var calls counter
	bodies := make(chan string, 10)
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- string(b)
		flaky(&calls, 1, func(w http.ResponseWriter, r *http.Request) {
			writeJSON(t, w, http.StatusCreated, validDefinition())
		})(w, r)
	}), Options{})

	res, err := c.PutDefinition(context.Background(), validDefinition(), WriteOptions{})

	if err != nil {
		t.Fatalf("PutDefinition: %v", err)
	}
	if !res.Created {
		t.Errorf("Created = false after 201")
	}
	close(bodies)
	var got []string
	for b := range bodies {
		got = append(got, b)
	}
	if len(got) != 2 || got[0] == "" || got[0] != got[1] {
		t.Errorf("bodies = %q, want the same non-empty body twice", got)
	}
}

func TestRetryBackoffIsCapped(t *testing.T) {
	t.Parallel()
	var calls counter
	c, s, _ := newTestClient(t, flaky(&calls, 100, nil), Options{Retries: 7})

	_, err := c.ListAdmins(context.Background())

	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	want := []time.Duration{100, 200, 400, 800, 1600, 2000, 2000}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(s.got(), want) {
		t.Errorf("backoff = %v, want %v", s.got(), want)
	}
	if calls.get() != 8 {
		t.Errorf("server saw %d requests, want 8", calls.get())
	}
}

func TestDefaultJitterStaysWithinSchedule(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{100 * time.Millisecond, 2 * time.Second} {
		for range 1000 {
			if got := equalJitter(d); got < d/2 || got > d {
				t.Fatalf("equalJitter(%v) = %v, want within [%v, %v]", d, got, d/2, d)
			}
		}
	}
}

func TestNoRetryForPost(t *testing.T) {
	t.Parallel()
	calls := []struct {
		name string
		call func(*Client) error
	}{
		{"create token", func(c *Client) error {
			_, err := c.CreateToken(context.Background(), CreateTokenRequest{Name: "ci", Role: ratelimit.RoleViewer})
			return err
		}},
		{"quarantine", func(c *Client) error {
			_, err := c.Quarantine(context.Background(), "user", "mallory", QuarantineRequest{}, WriteOptions{})
			return err
		}},
		{"set enabled", func(c *Client) error {
			_, _, err := c.SetDefinitionEnabled(context.Background(), "caller:group:devs:60", false, WriteOptions{})
			return err
		}},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n counter
			c, s, _ := newTestClient(t, flaky(&n, 100, nil), Options{Retries: 5})

			err := tt.call(c)

			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if n.get() != 1 || len(s.got()) != 0 {
				t.Errorf("server saw %d requests and the client slept %v, want one request and no sleep", n.get(), s.got())
			}
		})
	}
}

func TestNoRetryForPostOnDroppedConnection(t *testing.T) {
	t.Parallel()
	var n counter
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.inc()
		dropConnection(t, w)
	}), Options{Retries: 5})

	_, err := c.CreateToken(context.Background(), CreateTokenRequest{Name: "ci", Role: ratelimit.RoleViewer})

	if err == nil {
		t.Fatal("CreateToken succeeded on a dropped connection")
	}
	if n.get() != 1 {
		t.Errorf("server saw %d requests, want 1: a POST must not be repeated", n.get())
	}
}

func TestRetryOnDroppedConnection(t *testing.T) {
	t.Parallel()
	var n counter
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.inc() == 1 {
			dropConnection(t, w)
			return
		}
		writeJSON(t, w, http.StatusOK, map[string]any{"tokens": []ratelimit.Token{{Name: "ci"}}})
	}), Options{})

	tokens, err := c.ListTokens(context.Background())

	if err != nil {
		t.Fatalf("ListTokens: %v", err)
	}
	if len(tokens) != 1 || n.get() != 2 {
		t.Errorf("tokens = %v after %d requests, want one token after 2", tokens, n.get())
	}
}

// dropConnection closes the connection without answering, as a crashing
// server or a proxy reset would.
func dropConnection(t *testing.T, w http.ResponseWriter) {
	t.Helper()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	_ = conn.Close()
}

func TestRetryConnectionRefusedStopsAtRetries(t *testing.T) {
	t.Parallel()
	c, s, srv := newTestClient(t, http.NotFoundHandler(), Options{Retries: 2})
	srv.Close() // nothing listens on the port any more

	_, err := c.GetMembership(context.Background(), "user:alice")

	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want connection refused", err)
	}
	if !strings.Contains(err.Error(), "after 3 attempts") {
		t.Errorf("err = %v, want it to say how many attempts were made", err)
	}
	if len(s.got()) != 2 {
		t.Errorf("slept %v, want two backoffs", s.got())
	}
}

func TestRetriesDisabled(t *testing.T) {
	t.Parallel()
	var n counter
	c, _, _ := newTestClient(t, flaky(&n, 100, nil), Options{Retries: -1})

	if _, err := c.ListAdmins(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if n.get() != 1 {
		t.Errorf("server saw %d requests, want 1", n.get())
	}
}

func TestRetryAfterHonored(t *testing.T) {
	t.Parallel()
	tests := []struct {
		header string
		want   time.Duration
	}{
		{"2", 2 * time.Second},
		{"300", 5 * time.Second}, // capped: a CLI should not hang for minutes
	}
	for _, tt := range tests {
		t.Run(tt.header, func(t *testing.T) {
			t.Parallel()
			var n counter
			c, s, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.inc() == 1 {
					w.Header().Set("Retry-After", tt.header)
					writeProblem(w, http.StatusServiceUnavailable, "draining")
					return
				}
				writeJSON(t, w, http.StatusOK, map[string]any{"admins": []any{}})
			}), Options{})

			start := time.Now()
			if _, err := c.ListAdmins(context.Background()); err != nil {
				t.Fatalf("ListAdmins: %v", err)
			}
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Errorf("call took %v: the test hook should have replaced the real sleep", elapsed)
			}
			if got := s.got(); len(got) != 1 || got[0] != tt.want {
				t.Errorf("slept %v, want [%v]", got, tt.want)
			}
		})
	}
}

func TestRetryStopsWhenContextCanceled(t *testing.T) {
	t.Parallel()
	var n counter
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, s, _ := newTestClient(t, flaky(&n, 100, nil), Options{Retries: 5})
	s.onSleep = cancel

	_, err := c.ListMemberships(ctx, MembershipFilter{})

	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("err = %v, want it to keep the last failure too", err)
	}
	if n.get() != 1 {
		t.Errorf("server saw %d requests, want 1", n.get())
	}
}

func TestRetryGivesUpWhenWaitOutlastsDeadline(t *testing.T) {
	t.Parallel()
	var n counter
	c, s, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.inc()
		w.Header().Set("Retry-After", "5")
		writeProblem(w, http.StatusServiceUnavailable, "draining")
	}), Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()

	_, err := c.ListAdmins(ctx)

	var apiErr *APIError
	if !errors.As(err, &apiErr) || err.Error() != "draining" {
		t.Fatalf("err = %v, want the server's 503", err)
	}
	if n.get() != 1 || len(s.got()) != 0 {
		t.Errorf("server saw %d requests, client slept %v; want 1 and none", n.get(), s.got())
	}
}

func TestCanceledContextIsNotRetried(t *testing.T) {
	t.Parallel()
	var n counter
	c, s, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.inc()
	}), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := c.ListAdmins(ctx)

	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n.get() != 0 || len(s.got()) != 0 {
		t.Errorf("server saw %d requests, client slept %v", n.get(), s.got())
	}
}

func TestTimeoutBoundsTheCall(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}), Options{Timeout: 50 * time.Millisecond})
	defer close(release)

	start := time.Now()
	_, err := c.ListAdmins(context.Background())

	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("call took %v despite a 50ms timeout", elapsed)
	}
}

func TestConditionalWriteRetriedOnlyWhenNotApplied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		fail      func(t *testing.T, w http.ResponseWriter)
		wantCalls int
	}{
		{"503 is retried", func(t *testing.T, w http.ResponseWriter) {
			writeProblem(w, http.StatusServiceUnavailable, "database unavailable")
		}, 2},
		{"502 may have been applied", func(t *testing.T, w http.ResponseWriter) {
			writeProblem(w, http.StatusBadGateway, "upstream reset")
		}, 1},
		{"dropped connection may have been applied", func(t *testing.T, w http.ResponseWriter) {
			dropConnection(t, w)
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n counter
			c, _, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.inc() == 1 {
					tt.fail(t, w)
					return
				}
				writeJSON(t, w, http.StatusOK, validDefinition())
			}), Options{})

			_, _ = c.PutDefinition(context.Background(), validDefinition(), WriteOptions{IfVersion: 4})

			if n.get() != tt.wantCalls {
				t.Errorf("server saw %d requests, want %d", n.get(), tt.wantCalls)
			}
		})
	}
}

func TestConditionalWriteRetriedWhenDialFails(t *testing.T) {
	t.Parallel()
	c, s, srv := newTestClient(t, http.NotFoundHandler(), Options{Retries: 1})
	srv.Close()

	_, err := c.PutMembership(context.Background(), ratelimit.Membership{SubjectType: "user", Subject: "alice"}, WriteOptions{IfVersion: 2})

	if !errors.Is(err, syscall.ECONNREFUSED) || len(s.got()) != 1 {
		t.Errorf("err = %v after sleeps %v, want connection refused after one retry", err, s.got())
	}
}
