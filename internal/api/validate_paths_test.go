package api_test

import (
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestValidateNormalizesPathVariants: once a target's limit is used up,
// every other spelling of its path is throttled too:
// case, encoded characters, parameters, whitespace and backslashes do not
// make a new target, and a disguised control-plane path is refused.
func TestValidateNormalizesPathVariants(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	// Defined in other case: names are stored lower-cased.
	define(t, env, admin, targetLimit("mcp_server", "SrvLim", 60, 2), targetLimit("a2a_agent", "AGX", 60, 2))
	for _, uri := range []string{"/srvlim/mcp", "/srvlim/mcp", "/agent/agx", "/agent/agx"} {
		if a := validate(t, hc, env, uri); a.status != http.StatusOK {
			t.Fatalf("%s within the limit: %d %s", uri, a.status, a.body)
		}
	}
	for _, uri := range []string{
		"/srvlim/mcp", "/SRVLIM/mcp", "/srvlim/MCP", "/srvlim/mcp%20", "/srvlim/mcp;x", "/srvlim;x/mcp", `/srvlim\mcp`,
		"/srvlim%5Cmcp", "/%73rvlim/mcp", "/srvlim/mcp/", "/SrvLim/SSE", "/srvlim/messages;a=b?session_id=1",
		"/agent/AGX", "/agent/agx;v=1", "/AGENT/agx%20",
	} {
		a := validate(t, hc, env, uri)
		if a.status != http.StatusForbidden || a.header.Get("X-RateLimit-Throttled") != "1" {
			t.Errorf("%s after the limit is used: %d %v %s, want 403 throttled", uri, a.status, a.header, a.body)
		}
	}
	// /%61pi/srvlim/mcp is /api/srvlim/mcp to anyone who decodes it: not
	// the control plane written literally, so it is refused, never waved
	// through as the control plane.
	for _, uri := range []string{"/%61pi/srvlim/mcp", "/API/srvlim/mcp", "/api;x/srvlim/mcp"} {
		a := validate(t, hc, env, uri)
		if a.status != http.StatusForbidden || a.header.Get("X-RateLimit-Throttled") != "" || a.header.Get("X-RateLimit-Unavailable") != "" {
			t.Errorf("%s: %d %v %s, want a plain 403", uri, a.status, a.header, a.body)
		}
	}
	if a := validate(t, hc, env, "/api/rate-limits"); a.status != http.StatusOK {
		t.Errorf("the control plane written literally: %d, want 200", a.status)
	}
}

// TestValidatePoisonedPathsChangeNoOtherDecision: while one client sends
// paths that decode to a NUL or to bytes that are not UTF-8, a caller who
// used up her limit stays throttled and a caller under a fail-closed limit
// stays allowed (item 1: such paths used to fail every decision
// sharing their round trip).
func TestValidatePoisonedPathsChangeNoOtherDecision(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	// alice's limit counts per day, the longest window there is, so that
	// no window turns during the run however slowly a busy machine runs
	// it (a 60 s window once turned mid-run and gave her 20 more calls);
	// the run starts clear of the day's turn and checks it stayed so.
	const day = 86400
	day0 := clearOfWindowTurn(t, day, 5*time.Minute)
	roomy := ratelimit.Definition{Axis: "caller", EntityType: "group", Name: "roomy", WindowSeconds: 60,
		UserMaxRequests: ptr(1_000_000), Enabled: true, FailClosed: true}
	define(t, env, admin,
		ratelimit.Definition{Axis: "caller", EntityType: "group", Name: "tight", WindowSeconds: day, UserMaxRequests: ptr(20), Enabled: true},
		roomy,
		ratelimit.Definition{Axis: "caller_target", EntityType: "group", Name: "pertarget", WindowSeconds: 60, UserMaxRequests: ptr(1_000_000), Enabled: true},
	)
	for _, m := range []ratelimit.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"tight"}},
		{SubjectType: "user", Subject: "bob", Groups: []string{"roomy"}},
		{SubjectType: "user", Subject: "mallory", Groups: []string{"pertarget"}},
	} {
		if _, err := admin.PutMembership(t.Context(), m, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refresh(t, env)
	for range 20 {
		if a := validate(t, hc, env, "/srv/mcp", "X-Auth-Username", "alice"); a.status != http.StatusOK {
			t.Fatalf("alice within her limit: %d %s", a.status, a.body)
		}
	}

	const rounds = 300
	plain := &http.Client{}
	var aliceAllowed, bobDenied, poisonOther atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, uri := range []string{"/x%00/mcp", "/srvx%FF/mcp", "/srvx%FE%00/mcp"} {
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if a := validate(t, plain, env, uri, "X-Auth-Username", "mallory"); a.status != http.StatusOK {
						poisonOther.Add(1)
					}
				}
			})
		}
	}
	var callers sync.WaitGroup
	for range 4 {
		callers.Go(func() {
			for range rounds / 4 {
				if a := validate(t, plain, env, "/srv/mcp", "X-Auth-Username", "alice"); a.status == http.StatusOK {
					aliceAllowed.Add(1)
				}
				if a := validate(t, plain, env, "/srv/mcp", "X-Auth-Username", "bob"); a.status != http.StatusOK {
					bobDenied.Add(1)
				}
			}
		})
	}
	callers.Wait()
	close(stop)
	wg.Wait()
	if now := time.Now().Unix() / day; now != day0 {
		t.Fatalf("the run took over 5 minutes and crossed the day's window turn: alice's count is not comparable")
	}
	if n := aliceAllowed.Load(); n != 0 {
		t.Errorf("alice, past her limit of 20, was allowed %d of %d times", n, rounds)
	}
	if n := bobDenied.Load(); n != 0 {
		t.Errorf("bob, under his fail-closed limit, was denied %d of %d times", n, rounds)
	}
	if n := poisonOther.Load(); n != 0 {
		t.Errorf("%d poisoned paths were not decided (200) like any other path", n)
	}
}

// clearOfWindowTurn waits, when the current window of the given length
// (aligned on the Unix epoch, as fixed windows are) ends within margin,
// until the next one starts, and returns the index of the window the run
// starts in.
func clearOfWindowTurn(t *testing.T, window int64, margin time.Duration) int64 {
	t.Helper()
	now := time.Now()
	end := time.Unix((now.Unix()/window+1)*window, 0)
	if left := end.Sub(now); left <= margin {
		t.Logf("waiting %v for the window to turn before the run", left.Round(time.Second))
		time.Sleep(left + 100*time.Millisecond)
	}
	return time.Now().Unix() / window
}
