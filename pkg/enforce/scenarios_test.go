package enforce_test

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
)

// The reference limiter scenarios.

func TestNoDefinitionsAllowsWithoutCounters(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	d := f.Check(user("alice", "mcpgw"))
	if !d.Allowed || d.Reason != enforce.ReasonAllowed || len(d.Gates) != 0 || d.Limit != 0 {
		t.Errorf("decision = %+v, want allowed with no gates", d)
	}
	if n := f.counter(""); n != 0 {
		t.Errorf("%d counter increments without any definition", n)
	}
}

func TestControlPlaneAndAnonymousCallsAreNotLimited(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("g", 60, ptr(1), ptr(1)))
	f.Member("user", "alice", "g")
	for range 3 {
		if d := f.Check(enforce.Call{Username: "alice"}); !d.Allowed {
			t.Fatalf("control-plane call (no target) denied: %+v", d)
		}
		if d := f.Check(enforce.Call{TargetType: "mcp_server", TargetName: "x"}); !d.Allowed {
			t.Fatalf("call with no caller denied: %+v", d)
		}
	}
	if n := f.counter(""); n != 0 {
		t.Errorf("control-plane calls touched counters (%d)", n)
	}
}

func TestGroupLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("testers", 60, ptr(3), ptr(3)))
	f.Member("user", "alice", "testers")
	if got := f.Burst(user("alice", "mcpgw"), 5); got != 3 {
		t.Fatalf("allowed %d of 5 at 3/min, want 3", got)
	}
	d := f.Check(user("alice", "mcpgw"))
	if d.Allowed || d.Reason != enforce.ReasonThrottled || d.Limit != 3 || d.Remaining != 0 {
		t.Errorf("4th call = %+v, want throttled with limit 3, remaining 0", d)
	}
	if d.RetryAfter != 60*time.Second || !d.Reset.Equal(f.Clock.Now().Add(time.Minute)) {
		t.Errorf("retry after %v, reset %v; want 60s and the next minute", d.RetryAfter, d.Reset)
	}
	// Someone not in the group is not limited.
	if got := f.Burst(user("bob", "mcpgw"), 5); got != 5 {
		t.Errorf("bob (no group) allowed %d of 5", got)
	}
	// The next window starts from zero.
	f.Clock.Advance(time.Minute)
	if got := f.Burst(user("alice", "mcpgw"), 5); got != 3 {
		t.Errorf("next minute: allowed %d of 5, want 3", got)
	}
}

func TestPerCallerTypeLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("mixed", 60, ptr(4), ptr(2)))
	f.Member("user", "alice", "mixed")
	f.Member("client", "bot", "mixed")
	if got := f.Burst(user("alice", "s"), 10); got != 4 {
		t.Errorf("user allowed %d, want 4", got)
	}
	if got := f.Burst(agent("bot", "s"), 10); got != 2 {
		t.Errorf("agent allowed %d, want 2", got)
	}
}

func TestTypeWithoutNumberIsNotGated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("humans-only", 60, ptr(2), nil))
	f.Member("client", "bot", "humans-only")
	f.Member("user", "alice", "humans-only")
	if got := f.Burst(agent("bot", "s"), 10); got != 10 {
		t.Errorf("agent in a group without agent_max_requests allowed %d of 10", got)
	}
	if got := f.Burst(user("alice", "s"), 10); got != 2 {
		t.Errorf("user allowed %d of 10, want 2", got)
	}
}

func TestAdminsBypassCallerGatesNotTargetGates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("g", 60, ptr(2), ptr(2)), target("mcp_server", "fragile", 60, 5))
	f.Member("user", "root", "g")
	f.Member("user", "ops", "g")
	admin := user("root", "other")
	admin.IsAdmin = true
	if got := f.Burst(admin, 10); got != 10 {
		t.Errorf("admin (IsAdmin) allowed %d of 10 on a caller limit of 2", got)
	}
	admin.TargetName = "fragile"
	if got := f.Burst(admin, 10); got != 5 {
		t.Errorf("admin allowed %d of 10 on a target limit of 5; target limits apply to admins", got)
	}
	// An administrator listed in the store counts, without the gateway saying so.
	if _, err := f.Store.Pool().Exec(t.Context(), `insert into rl_admins (subject_type, subject) values ('user', 'ops')`); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	if got := f.Burst(user("ops", "other"), 10); got != 10 {
		t.Errorf("admin from the store allowed %d of 10", got)
	}
}

// TestMinuteAndDayWindows is the reference's own example: 30 calls against
// 5/min and 20/day leave the daily counter at 5, because a call denied by
// the minute gate consumes nothing on the day gate.
func TestMinuteAndDayWindows(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("g", 60, ptr(5), nil), callerGroup("g", 86400, ptr(20), nil))
	f.Member("user", "alice", "g")
	if got := f.Burst(user("alice", "s"), 30); got != 5 {
		t.Fatalf("allowed %d of 30, want 5", got)
	}
	if day := f.counter(counterkey.Caller(86400, "user:alice").String()); day != 5 {
		t.Errorf("daily counter = %d, want 5 (denied calls must not consume it)", day)
	}
	// Four more minutes: 20 in the day, then the day gate denies.
	for range 4 {
		f.Clock.Advance(time.Minute)
		f.Burst(user("alice", "s"), 10)
	}
	if day := f.counter(counterkey.Caller(86400, "user:alice").String()); day != 20 {
		t.Errorf("daily counter = %d, want 20", day)
	}
	f.Clock.Advance(time.Minute)
	d := f.Check(user("alice", "s"))
	if d.Allowed || len(d.Denied) != 1 || d.Denied[0].WindowSeconds != 86400 {
		t.Errorf("after 20 in the day: %+v, want denied by the day gate", d)
	}
	if d.RetryAfter < 23*time.Hour {
		t.Errorf("retry after %v, want until the day turns", d.RetryAfter)
	}
}

func TestMostRestrictiveGroupWinsPerWindow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("loose", 60, ptr(10), nil), callerGroup("tight", 60, ptr(3), nil))
	f.Member("user", "alice", "loose", "tight")
	if got := f.Burst(user("alice", "s"), 10); got != 3 {
		t.Errorf("allowed %d, want 3 (the tighter group)", got)
	}
}

func TestTargetsHaveTheirOwnBuckets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(
		target("a2a_agent", "/booking-agent", 60, 3),
		serverGroup("fragile", 60, 2, "airegistry-tools", "aws-kb"),
	)
	booking := enforce.Call{Username: "u", TargetType: "a2a_agent", TargetName: "booking-agent"}
	if got := f.Burst(booking, 5); got != 3 {
		t.Errorf("a2a agent allowed %d, want 3", got)
	}
	// Each member of the server group gets its own 2/min, whoever calls.
	if got := f.Burst(user("u1", "airegistry-tools"), 3) + f.Burst(user("u2", "airegistry-tools"), 3); got != 2 {
		t.Errorf("airegistry-tools allowed %d across callers, want 2", got)
	}
	if got := f.Burst(user("u1", "/aws-kb/"), 3); got != 2 {
		t.Errorf("aws-kb allowed %d, want its own 2", got)
	}
	if got := f.Burst(user("u1", "not-a-member"), 3); got != 3 {
		t.Errorf("a server outside the group allowed %d of 3", got)
	}
}

func TestCallerAndTargetGatesTogether(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("g", 60, ptr(5), nil), target("mcp_server", "s", 60, 3))
	f.Member("user", "alice", "g")
	f.Member("user", "bob", "g")
	if got := f.Burst(user("alice", "s"), 10); got != 3 {
		t.Errorf("alice on s allowed %d, want 3 (target limit)", got)
	}
	if got := f.Burst(user("alice", "t"), 10); got != 2 {
		t.Errorf("alice on t allowed %d, want 2 (her caller limit 5 less the 3 on s)", got)
	}
	if got := f.Burst(user("bob", "s"), 10); got != 0 {
		t.Errorf("bob on s allowed %d, want 0 (s is exhausted for everyone)", got)
	}
}

func TestCallerTargetIndependence(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerTarget("per-server-cap", 60, 2))
	f.Member("user", "alice", "per-server-cap")
	f.Member("user", "bob", "per-server-cap")
	if got := f.Burst(user("alice", "x"), 5); got != 2 {
		t.Errorf("alice on x allowed %d, want 2", got)
	}
	if got := f.Burst(user("alice", "y"), 5); got != 2 {
		t.Errorf("alice on y allowed %d, want her own 2 on y", got)
	}
	if got := f.Burst(user("bob", "x"), 5); got != 2 {
		t.Errorf("bob on x allowed %d, want his own 2", got)
	}
}

func TestRetryAfterIsAtLeastOneSecond(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 1, 1))
	f.Clock.Advance(999 * time.Millisecond) // 1 ms before the window turns
	f.Check(user("u", "s"))
	d := f.Check(user("u", "s"))
	if d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("decision = %+v, want denied with retry after exactly 1s", d)
	}
}
