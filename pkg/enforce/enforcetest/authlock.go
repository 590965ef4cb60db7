package enforcetest

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestAuthLockout checks the failed-credential lockout of a client address
// across two Enforcers (replicas) sharing a store built by newStore, for
// every algorithm of the call's gate: replica A counts the failures that
// lock the address; replica B, which has never seen it, refuses its next
// call (auth-locked) and that call holds nothing of any gate afterwards
// (a call from another address then finds the gate as if the refused one
// had never come), and B refuses the address again from memory.
//
// It runs twice: over the store as it is, where a store that implements
// enforce.CounterReturner lets B ask about the address in the round trip
// of the call's counters and give back what the call took, and over the
// store with its give-back hidden, where B asks first, on its own. The
// answers are the same.
func TestAuthLockout(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer, opts ...Opts) {
	t.Helper()
	for _, algo := range optsOf(opts).algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			for _, v := range []struct {
				name string
				wrap func(enforce.CounterStore) enforce.CounterStore
			}{
				{"asked in the call's round trip", func(s enforce.CounterStore) enforce.CounterStore { return s }},
				{"asked first", func(s enforce.CounterStore) enforce.CounterStore { return takeOnly{s} }},
			} {
				t.Run(v.name, func(t *testing.T) {
					t.Parallel()
					authLockout(t, algo, v.wrap(newStore(t)), build)
				})
			}
		})
	}
}

// takeOnly hides every method of a store but the CounterStore's.
type takeOnly struct{ enforce.CounterStore }

func authLockout(t *testing.T, algo enforce.Algorithm, store enforce.CounterStore, build BuildEnforcer) {
	clock := newLeaseClock()
	opts := enforce.Options{Now: clock.now, BackendTimeout: 5 * time.Second, SweepInterval: -1, CacheTTL: 24 * time.Hour,
		AuthThrottle: &enforce.AuthThrottleOptions{MaxFailures: 3, Window: time.Minute, Lockout: 5 * time.Minute}}
	src := StaticSource(policyState(algo, false))
	a, b := build(t, opts, store, src), build(t, opts, store, src)
	ctx := context.Background()
	const locked, other, third = "198.51.100.7", "198.51.100.8", "198.51.100.9"
	call := func(ip string) enforce.Call {
		return enforce.Call{ClientIP: ip, TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	}
	for i := range 3 {
		st, err := a.ReportAuth(ctx, enforce.AuthReport{ClientIP: locked, Outcome: enforce.AuthFailure})
		if err != nil {
			t.Fatal(err)
		}
		if st.Locked != (i == 2) {
			t.Fatalf("failure %d: locked %v", i+1, st.Locked)
		}
	}
	d, err := b.Check(ctx, call(locked))
	if err != nil || d.Reason != enforce.ReasonAuthLocked || d.Allowed {
		t.Fatalf("B's first call from the locked address: %s (allowed %v, err %v), want auth-locked", d.Reason, d.Allowed, err)
	}
	if d.RetryAfter != 5*time.Minute {
		t.Errorf("Retry-After %s, want the lockout's 5m0s", d.RetryAfter)
	}
	// The refused call holds nothing: the next call, from another
	// address, finds the whole limit less itself.
	want := int64(99)
	for _, ip := range []string{other, locked, third} {
		d, err := b.Check(ctx, call(ip))
		if err != nil {
			t.Fatal(err)
		}
		if ip == locked {
			if d.Reason != enforce.ReasonAuthLocked {
				t.Errorf("B's second call from the locked address: %s, want auth-locked", d.Reason)
			}
			continue
		}
		if !d.Allowed || d.Remaining != want {
			t.Errorf("call from %s: allowed %v, remaining %d, want allowed with %d left (a refused call kept some of the gate)",
				ip, d.Allowed, d.Remaining, want)
		}
		want--
	}
}
