package api_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// TestAccessLogNamesTheActor: an operator reading the log must see which
// token made each request.
func TestAccessLogNamesTheActor(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	var logs lockedBuffer
	// A successful read is logged at DEBUG.
	srv := api.New(st, api.Config{}, api.Opts{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Counters: postgres.NewCounterStore(st.Pool())})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	env := startInProcess(t, st) // creates the "fuzz" admin token in this store
	if a := do(t, ts.URL, call{method: "GET", path: "/api/rate-limits", token: env.token}); a.status != 200 {
		t.Fatalf("list: %d %s", a.status, a.body)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `route="GET /api/rate-limits"`) {
			line = l
		}
	}
	if !strings.Contains(line, "actor=fuzz") {
		t.Errorf("access log line %q does not name the token", line)
	}
	if strings.Contains(logs.String(), env.token) {
		t.Error("the token itself reached the log")
	}
}

// accessLines are the access log lines of route in logs.
func accessLines(logs, route string) []string {
	var out []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `msg=request `) && strings.Contains(l, `route="`+route+`"`) {
			out = append(out, l)
		}
	}
	return out
}

// TestAccessLogLeavesDecisionsAndPollsOut: at INFO, as rlapi logs by
// default, a gateway's decisions write no access log line (they were a
// line per decision) unless --access-log-decisions, a successful read (the
// dashboard's and events follow's polls) is DEBUG, and writes and
// refusals stay at INFO.
func TestAccessLogLeavesDecisionsAndPollsOut(t *testing.T) {
	t.Parallel()
	for _, decisions := range []bool{false, true} {
		var logs lockedBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		env := apitest.StartWith(t, api.Config{AccessLogDecisions: decisions}, apitest.Options{Logger: log})
		gw := env.Token(t, "gw", "enforcer")
		// By default a gateway's load writes nothing: 10,000 decisions
		// from 16 connections at once; with the flag each writes a line.
		checks, workers := 10_000, 16
		if decisions {
			checks, workers = 5, 1
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < checks; i += workers {
					a, err := tryDo(env.URL, call{method: "POST", path: "/api/check", token: gw, body: `{"username":"alice"}`})
					if err != nil || a.status != 200 {
						t.Errorf("check: %d %s %v", a.status, a.body, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, c := range []call{
			{method: "GET", path: "/api/rate-limits"},
			{method: "GET", path: "/api/rate-limit-events?after=0"},
			{method: "PUT", path: "/api/rate-limit-memberships/user:alice", body: `{"subject_type":"user","subject":"alice","groups":["devs"]}`},
			{method: "GET", path: "/api/rate-limit-memberships/user:nobody"},
		} {
			c.token = env.AdminToken
			do(t, env.URL, c)
		}
		out := logs.String()
		want := 0
		if decisions {
			want = checks
		}
		if n := len(accessLines(out, "POST /api/check")); n != want {
			t.Errorf("access-log-decisions=%v: %d access lines for %d checks, want %d:\n%s", decisions, n, checks, want, out)
		}
		for route, want := range map[string]int{
			"GET /api/rate-limits": 0, "GET /api/rate-limit-events": 0, // polls: DEBUG
			"PUT /api/rate-limit-memberships/{id...}": 1, "GET /api/rate-limit-memberships/{id...}": 1, // a write, a 404
		} {
			if n := len(accessLines(out, route)); n != want {
				t.Errorf("%s: %d access lines at INFO, want %d:\n%s", route, n, want, out)
			}
		}
	}
}

// TestAccessLogDebugHasThePolls: the reads left out at INFO are there at
// DEBUG (rlapi --log-level debug).
func TestAccessLogDebugHasThePolls(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := apitest.StartWith(t, api.Config{}, apitest.Options{Logger: log})
	do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: env.AdminToken})
	if l := accessLines(logs.String(), "GET /api/rate-limits"); len(l) != 1 || !strings.Contains(l[0], "level=DEBUG") {
		t.Errorf("GET /api/rate-limits at DEBUG: %q", l)
	}
}

// TestDocumentedAnswersAreNotErrors: the 501 of a lockout lift when the
// counters are in Redis is a documented answer, not a failure: no ERROR
// line, nor for the 4xx of bad input. The counters API answers there.
func TestDocumentedAnswersAreNotErrors(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rs, err := redis.Open(context.Background(), redistest.URL(t, "REDIS_URL"), redis.Options{Prefix: "t" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	env := apitest.StartWith(t, api.Config{}, apitest.Options{Logger: log, Counters: rs})
	for _, c := range []struct {
		call
		status int
	}{
		{call{method: "DELETE", path: "/api/auth-lockouts/203.0.113.9"}, 501},
		{call{method: "GET", path: "/api/rate-limit-counters?caller=user:alice"}, 200},
		{call{method: "DELETE", path: "/api/rate-limit-counters?caller=user:alice"}, 200},
		{call{method: "GET", path: "/api/rate-limits?axis=bogus"}, 400},
		{call{method: "PUT", path: "/api/rate-limits/x", body: `{}`}, 400},
	} {
		c.token = env.AdminToken
		if a := do(t, env.URL, c.call); a.status != c.status {
			t.Fatalf("%s %s: %d %s, want %d", c.method, c.path, a.status, a.body, c.status)
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("documented answers logged at ERROR:\n%s", logs.String())
	}
}
