package enforcetest

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/degrade"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// degradeState limits mcp_server "s" (fail policy degrade), "o" (open)
// and "c" (closed) to 10 calls a minute each, counting with algo.
func degradeState(algo enforce.Algorithm) enforce.State {
	defs := Sentinels()
	for _, p := range []struct{ name, policy string }{{"s", ratelimit.FailPolicyDegrade}, {"o", ratelimit.FailPolicyOpen}, {"c", ratelimit.FailPolicyClosed}} {
		limit := 10
		d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: p.name,
			WindowSeconds: 60, MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Algorithm: string(algo),
			FailPolicy: p.policy}
		d.ID = d.Key()
		defs = append(defs, d)
	}
	return enforce.State{Definitions: defs}
}

// TestDegradedMode checks the fail policy degrade over the stores built
// by newStore (fresh per algorithm), with two Enforcers, two replicas
// sharing one store, each with its own pkg/enforce/degrade Fallback and a
// replica count of 2, on one clock that stays in one window:
//
//   - while the store fails, a degrade-policy target admits at most its
//     share, ceil(10 / 2) = 5, per replica, on counters of the replica's
//     own: the decisions say Degraded and carry the store's error, and
//     those admitted the share as their Limit; an open-policy target fails open and a
//     closed-policy one fails closed, neither degraded;
//   - a report while the store still fails returns an error and keeps
//     what is owed;
//   - once the store is back, each replica's report is written before its
//     next decision on the shared counters, through the store's own Take:
//     2 counted before the outage and 5 + 3 reported leave room for 0, so
//     nothing more is admitted in the window (the bound of
//     docs/operations.md, "Degraded mode"), and the replica is no longer
//     degraded.
func TestDegradedMode(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer, opts ...Opts) {
	t.Helper()
	for _, algo := range optsOf(opts).algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			testDegradedMode(t, algo, newStore, build)
		})
	}
}

func testDegradedMode(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	ctx := context.Background()
	clock := newLeaseClock()
	shared := Failing(newStore(t), ErrInjected)
	shared.Repair()
	replica := func() (*enforce.Enforcer, *degrade.Fallback) {
		f, err := degrade.New(degrade.Options{Counters: shared, Replicas: func() int { return 2 }, Now: clock.now,
			ProbeInterval: -1, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		e := build(t, enforce.Options{Fallback: f, Now: clock.now, BackendTimeout: 10 * time.Second, SweepInterval: -1,
			CacheTTL: 24 * time.Hour}, shared, StaticSource(degradeState(algo)))
		return e, f
	}
	a, fa := replica()
	b, fb := replica()
	admit := func(e *enforce.Enforcer, target string, n int, degraded bool) int {
		t.Helper()
		allowed := 0
		for range n {
			d, err := boundedCheck(t, e, policyCall(target))
			if d.Degraded != degraded {
				t.Fatalf("%s: degraded %v, reason %s, err %v; want degraded %v", target, d.Degraded, d.Reason, err, degraded)
			}
			if degraded && (err == nil || d.Allowed && d.Limit != 5) {
				t.Fatalf("%s degraded: err %v, limit %d; want the store's error and (admitted) the share 5", target, err, d.Limit)
			}
			if d.Allowed {
				allowed++
			}
		}
		return allowed
	}
	if got := admit(a, "s", 2, false); got != 2 {
		t.Fatalf("before the outage: %d of 2 admitted", got)
	}
	shared.Break()
	if got := admit(a, "s", 10, true); got != 5 {
		t.Errorf("replica a during the outage: %d of 10 admitted, want its share 5", got)
	}
	if got := admit(b, "s", 3, true); got != 3 {
		t.Errorf("replica b during the outage: %d of 3 admitted, want 3", got)
	}
	if d, _ := boundedCheck(t, a, policyCall("o")); !d.Allowed || d.Reason != enforce.ReasonFailOpen || d.Degraded {
		t.Errorf("an open-policy target: allowed %v, reason %s, degraded %v; want fail-open", d.Allowed, d.Reason, d.Degraded)
	}
	if d, _ := boundedCheck(t, a, policyCall("c")); d.Allowed || d.Reason != enforce.ReasonFailClosed || d.Degraded {
		t.Errorf("a closed-policy target: allowed %v, reason %s, degraded %v; want fail-closed", d.Allowed, d.Reason, d.Degraded)
	}
	if err := fa.Report(ctx); err == nil {
		t.Error("a report while the store fails answered no error")
	}
	if fa.Owed() != 5 || !fa.Pending() {
		t.Errorf("after a failed report: owed %d, pending %v; want 5 still owed", fa.Owed(), fa.Pending())
	}

	shared.Repair()
	if err := fb.Report(ctx); err != nil {
		t.Fatalf("replica b's report once the store is back: %v", err)
	}
	// Replica a has not reported: its next decision writes its report
	// first, and then finds the window used up (2 + 5 + 3 = 10).
	if got := admit(a, "s", 3, false); got != 0 {
		t.Errorf("replica a after the store is back: %d admitted, want 0 (2 counted, 8 reported, limit 10)", got)
	}
	if got := admit(b, "s", 3, false); got != 0 {
		t.Errorf("replica b after the store is back: %d admitted, want 0", got)
	}
	if fa.Pending() || fb.Pending() || fa.Owed() != 0 {
		t.Errorf("after the reports: pending %v and %v, owed %d; want neither degraded", fa.Pending(), fb.Pending(), fa.Owed())
	}
	if d, _ := boundedCheck(t, a, policyCall("o")); !d.Allowed || d.Reason != enforce.ReasonAllowed {
		t.Errorf("an open-policy target after the store is back: allowed %v, reason %s", d.Allowed, d.Reason)
	}
}
