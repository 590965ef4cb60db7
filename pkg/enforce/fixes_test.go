package enforce_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Each test here fails on the reference implementation's behaviour.

// Reference: a gate that passed before the denying gate keeps its
// increment. Ours: a denied call consumes nothing on any gate, whatever the
// order of the gates.
func TestDeniedCallConsumesNothingOnAnyGate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	// The day gate sorts before the tight target gate, so a sequential
	// limiter would have taken from it already.
	f.Def(callerGroup("g", 86400, ptr(100), nil), target("mcp_server", "s", 60, 2))
	f.Member("user", "alice", "g")
	f.Burst(user("alice", "s"), 10)
	if day := f.counter(counterkey.Caller(86400, "user:alice").String()); day != 2 {
		t.Errorf("daily caller counter = %d after 2 allowed and 8 denied calls, want 2", day)
	}
}

// Reference: overlapping server groups share one counter per server and
// double-count. Ours: each definition has its own bucket.
func TestOverlappingServerGroupsDoNotDoubleCount(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(serverGroup("tier-a", 60, 3, "shared"), serverGroup("tier-b", 60, 3, "shared"))
	if got := f.Burst(user("u", "shared"), 10); got != 3 {
		t.Errorf("allowed %d, want 3 (each group's bucket counts each call once)", got)
	}
}

// Reference: a user and a client with the same name share a caller
// counter. Ours: keyed by caller type and identity.
func TestUserAndClientWithTheSameNameAreSeparate(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("g", 60, ptr(2), ptr(2)))
	f.Member("user", "svc", "g")
	f.Member("client", "svc", "g")
	if got := f.Burst(user("svc", "s"), 5) + f.Burst(agent("svc", "s"), 5); got != 4 {
		t.Errorf("allowed %d, want 2 for the user and 2 for the agent", got)
	}
}

// Reference: Retry-After comes from the first denying gate. Ours: the latest
// reset among the denying gates, the earliest moment the call can pass.
func TestRetryAfterIsTheLatestResetAmongDenyingGates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 60, 1), target("mcp_server", "s", 3600, 1))
	f.Check(user("u", "s"))
	d := f.Check(user("u", "s"))
	if d.Allowed || len(d.Denied) != 2 {
		t.Fatalf("second call = %+v, want denied by both gates", d)
	}
	if d.RetryAfter != time.Hour || d.Limit != 1 || !d.Reset.Equal(f.Clock.Now().Add(time.Hour)) {
		t.Errorf("retry after %v (reset %v), want the hour gate's 1h", d.RetryAfter, d.Reset)
	}
}

// Reference: changes reach enforcement after a 30 s cache TTL. Ours: a
// change made through the store reaches a running Enforcer within a second
// (LISTEN/NOTIFY), with the TTL only as a safety net.
func TestChangesArriveWithinASecond(t *testing.T) {
	t.Parallel()
	st := newFixture(t, enforce.Options{}).Store
	e, err := postgres.New(context.Background(), st.Pool(), enforce.Options{CacheTTL: time.Hour, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	call := user("alice", "s")
	if d, _ := e.Check(context.Background(), call); !d.Allowed {
		t.Fatal("denied before any change")
	}
	err = st.InTx(context.Background(), func(q *store.Queries) error {
		_, err := q.PutMembership(context.Background(), ratelimit.Membership{SubjectType: "user", Subject: "alice",
			Groups: []string{ratelimit.GroupQuarantineCallers}}, store.Write{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	for {
		d, _ := e.Check(context.Background(), call)
		if d.Reason == enforce.ReasonQuarantined {
			break
		}
		if time.Since(changed) > time.Second {
			t.Fatalf("quarantine not enforced %v after the change", time.Since(changed))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("quarantine enforced %v after the change", time.Since(changed).Round(time.Millisecond))
}

// Reference: tool and skill limits are rejected as "later phase". Ours:
// enforced when the call names the tool or skill.
func TestToolAndSkillLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_tool", "srv:search", 60, 2), target("a2a_skill", "/booking:reserve", 60, 1))
	search := enforce.Call{Username: "u", TargetType: "mcp_server", TargetName: "/srv", Tool: "search"}
	if got := f.Burst(search, 5); got != 2 {
		t.Errorf("tool search allowed %d, want 2", got)
	}
	other := enforce.Call{Username: "u", TargetType: "mcp_server", TargetName: "srv", Tool: "fetch"}
	if got := f.Burst(other, 5); got != 5 {
		t.Errorf("another tool allowed %d of 5", got)
	}
	reserve := enforce.Call{Username: "u", TargetType: "a2a_agent", TargetName: "booking", Tool: "reserve"}
	if got := f.Burst(reserve, 3); got != 1 {
		t.Errorf("skill reserve allowed %d, want 1", got)
	}
}

func TestShadowCountsButNeverDenies(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	shadow := target("mcp_server", "s", 60, 2)
	shadow.Mode = ratelimit.ModeShadow
	f.Def(shadow, target("mcp_server", "s", 3600, 5))
	var wouldDeny int
	for range 8 {
		d := f.Check(user("u", "s"))
		if d.Allowed {
			wouldDeny += len(d.Shadow)
		}
		if d.Limit != 5 && d.Limit != 0 {
			t.Errorf("headers describe the shadow gate: limit %d", d.Limit)
		}
	}
	if wouldDeny != 3 {
		t.Errorf("shadow gate would have denied %d allowed calls, want 3 (calls 3-5; 6-8 were denied by the enforce gate)", wouldDeny)
	}
	if got := f.counter("target:mcp_server:s:3600"); got != 5 {
		t.Errorf("enforce gate counted %d, want 5: the shadow gate changed what it takes", got)
	}
	if got := f.counter("target:mcp_server:s:60"); got != 2 {
		t.Errorf("shadow gate counted %d, want 2 (it counts while it has room)", got)
	}
}

func TestPeekConsumesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 60, 2))
	for range 5 {
		d, err := f.E.Peek(context.Background(), user("u", "s"))
		if err != nil || !d.Allowed || d.Remaining != 2 {
			t.Fatalf("peek = %+v, %v; want allowed with 2 remaining", d, err)
		}
	}
	f.Burst(user("u", "s"), 2)
	if d, _ := f.E.Peek(context.Background(), user("u", "s")); d.Allowed || d.Reason != enforce.ReasonThrottled {
		t.Errorf("peek when full = %+v, want throttled", d)
	}
}

func TestCostConsumesMoreThanOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 60, 10))
	c := user("u", "s")
	c.Cost = 4
	if got := f.Burst(c, 5); got != 2 {
		t.Errorf("cost 4 against 10 allowed %d, want 2", got)
	}
	if d, _ := f.E.Peek(context.Background(), user("u", "s")); d.Remaining != 2 {
		t.Errorf("remaining %d, want 2", d.Remaining)
	}
}

// TestBurstOfChangesFoldsIntoFewReloads: a stream of writes notifies on
// every change; the enforcer must not reload back to back (that cost rlapi
// a third of its PUT throughput), yet the last change still arrives within
// a second.
func TestBurstOfChangesFoldsIntoFewReloads(t *testing.T) {
	t.Parallel()
	st := newFixture(t, enforce.Options{}).Store
	reg := prometheus.NewRegistry()
	e, err := postgres.New(context.Background(), st.Pool(), enforce.Options{CacheTTL: time.Hour, SweepInterval: -1, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	reloads := func() uint64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "rlctl_enforce_snapshot_load_seconds" {
				return mf.GetMetric()[0].GetHistogram().GetSampleCount()
			}
		}
		return 0
	}
	time.Sleep(300 * time.Millisecond) // let the listener's first reload pass
	before := reloads()
	start := time.Now()
	const changes = 60
	for i := range changes {
		err := st.InTx(context.Background(), func(q *store.Queries) error {
			_, err := q.PutMembership(context.Background(), ratelimit.Membership{SubjectType: "user",
				Subject: fmt.Sprintf("u%d", i), Groups: []string{"g"}}, store.Write{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	last := user(fmt.Sprintf("u%d", changes-1), "s")
	err = st.InTx(context.Background(), func(q *store.Queries) error {
		_, err := q.PutMembership(context.Background(), ratelimit.Membership{SubjectType: "user",
			Subject: last.Username, Groups: []string{ratelimit.GroupQuarantineCallers}}, store.Write{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	wrote := time.Now()
	for {
		if d, _ := e.Peek(context.Background(), last); d.Reason == enforce.ReasonQuarantined {
			break
		}
		if time.Since(wrote) > time.Second {
			t.Fatalf("last change not enforced a second after it was written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	n := reloads() - before
	// At most one reload per 50 ms pause (the floor after a reload of only
	// the changed rows), plus the one in flight.
	maxReloads := uint64(time.Since(start)/(50*time.Millisecond)) + 2
	if n > maxReloads || n >= changes {
		t.Errorf("%d changes in %v caused %d reloads, want at most %d", changes+1, time.Since(start).Round(time.Millisecond), n, maxReloads)
	}
}
