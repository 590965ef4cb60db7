package enforcetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestAuthLockout checks the failed-credential lockout of a client address
// (pkg/auththrottle, each Enforcer's Options.Guard) across two Enforcers
// (replicas) sharing a store built by newStore, for
// every algorithm of the call's gate: replica A counts the failures that
// lock the address; replica B, which has never seen it, refuses its next
// call (auth-locked) and that call holds nothing of any gate afterwards
// (a call from another address then finds the gate as if the refused one
// had never come), and B refuses the address again from memory.
//
// It runs twice: over the store as it is, where a store that declares
// GiveBack lets B ask about the address in the round trip of the call's
// counters and give back what the call took, and over the store declaring
// no GiveBack, where B asks first, on its own. The answers are the same.
// The second run builds its Enforcers with Build, whatever build is:
// the lease layer needs GiveBack (lease.New refuses a store without it),
// and over the layer (CounterCapabilities.Local) the throttle asks first
// anyway, which the first run then covers.
//
// Then a successful authentication after four failures, split between
// the replicas, leaves the failure count at zero on both: four more
// failures do not lock, the fifth does, on both.
func TestAuthLockout(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer, opts ...Opts) {
	t.Helper()
	t.Run("a success resets the failure count on every replica", func(t *testing.T) {
		t.Parallel()
		authSuccessResets(t, newStore(t), build)
	})
	for _, algo := range optsOf(opts).algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			for _, v := range []struct {
				name  string
				wrap  func(enforce.CounterStore) enforce.CounterStore
				build BuildEnforcer
			}{
				{"asked in the call's round trip", func(s enforce.CounterStore) enforce.CounterStore { return s }, build},
				{"asked first", func(s enforce.CounterStore) enforce.CounterStore { return takeOnly{s} }, Build},
			} {
				t.Run(v.name, func(t *testing.T) {
					t.Parallel()
					authLockout(t, algo, v.wrap(newStore(t)), v.build)
				})
			}
		})
	}
}

// takeOnly is a store that declares it cannot give back.
type takeOnly struct{ enforce.CounterStore }

func (s takeOnly) Capabilities() enforce.CounterCapabilities {
	c := s.CounterStore.Capabilities()
	c.GiveBack = false
	return c
}

func (takeOnly) ReturnUnused(context.Context, []enforce.Return, time.Time) error {
	return fmt.Errorf("enforcetest: take only: %w", enforce.ErrNotImplemented)
}

func authLockout(t *testing.T, algo enforce.Algorithm, store enforce.CounterStore, build BuildEnforcer) {
	clock := newLeaseClock()
	opts := enforce.Options{Now: clock.now, BackendTimeout: 5 * time.Second, SweepInterval: -1, CacheTTL: 24 * time.Hour}
	src := StaticSource(policyState(algo, false))
	throttle := auththrottle.Options{MaxFailures: 3, Window: time.Minute, Lockout: 5 * time.Minute, Now: clock.now, BackendTimeout: 5 * time.Second}
	_, ta := guarded(t, build, opts, throttle, store, src) // replica A counts through its throttle
	b, _ := guarded(t, build, opts, throttle, store, src)
	ctx := context.Background()
	const locked, other, third = "198.51.100.7", "198.51.100.8", "198.51.100.9"
	call := func(ip string) enforce.Call {
		return enforce.Call{ClientIP: ip, TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	}
	for i := range 3 {
		st, err := ta.ReportAuth(ctx, auththrottle.Report{ClientIP: locked, Outcome: auththrottle.Failure})
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

// authSuccessResets: two replicas over one store share the failure count
// and the lockout; a success on one resets what both counted.
func authSuccessResets(t *testing.T, store enforce.CounterStore, build BuildEnforcer) {
	clock := newLeaseClock()
	opts := enforce.Options{Now: clock.now, BackendTimeout: 5 * time.Second, SweepInterval: -1, CacheTTL: 24 * time.Hour}
	throttle := auththrottle.Options{Now: clock.now, BackendTimeout: 5 * time.Second} // 5 failures in 60 s lock for 300 s
	src := StaticSource(enforce.State{Definitions: Sentinels()})
	a, ta := guarded(t, build, opts, throttle, store, src)
	b, tb := guarded(t, build, opts, throttle, store, src)
	replicas, throttles := []*enforce.Enforcer{a, b}, []*auththrottle.Throttle{ta, tb}
	ctx := context.Background()
	const ip = "2001:db8:aa:bb::1"
	report := func(th *auththrottle.Throttle, outcome auththrottle.Outcome) auththrottle.Status {
		t.Helper()
		st, err := th.ReportAuth(ctx, auththrottle.Report{ClientIP: ip, Outcome: outcome, Identity: "alice"})
		if err != nil {
			t.Fatalf("report %s: %v", outcome, err)
		}
		return st
	}
	for i := range 4 {
		if st := report(throttles[i%2], auththrottle.Failure); st.Locked {
			t.Fatalf("locked after %d failures, want 5", i+1)
		}
	}
	// A success on one replica resets what both counted.
	report(throttles[1], auththrottle.Success)
	for i := range 4 {
		if st := report(throttles[i%2], auththrottle.Failure); st.Locked {
			t.Fatalf("after the success, locked at failure %d: the failures before it still counted", i+1)
		}
	}
	if st, err := throttles[0].Locked(ctx, ip); err != nil || st.Locked {
		t.Fatalf("after the success and 4 failures: %+v, %v; want not locked", st, err)
	}
	if st := report(throttles[1], auththrottle.Failure); !st.Locked || !st.Started {
		t.Fatalf("5th failure since the success: %+v, want locked", st)
	}
	// The other replica answered "not locked" less than RecheckAfter ago;
	// once that has passed it asks the store and refuses the whole /64.
	clock.advance(time.Second)
	if st, err := throttles[0].Locked(ctx, "2001:db8:aa:bb::ffff"); err != nil || !st.Locked || st.RetryAfter != 299*time.Second {
		t.Fatalf("the other replica: %+v, %v; want locked for 299s more", st, err)
	}
	d, _ := replicas[0].Check(ctx, enforce.Call{TargetType: ratelimit.EntityMCPServer, TargetName: "x", ClientIP: ip})
	if d.Reason != enforce.ReasonAuthLocked {
		t.Errorf("the other replica's Check: %s, want auth-locked", d.Reason)
	}
}

// guarded builds an Enforcer with build over store and src, guarded by a
// failed-credential throttle of its own counting in store.
func guarded(t *testing.T, build BuildEnforcer, opts enforce.Options, throttle auththrottle.Options, store enforce.CounterStore,
	src enforce.Source) (*enforce.Enforcer, *auththrottle.Throttle) {
	t.Helper()
	th, err := auththrottle.New(store, throttle)
	if err != nil {
		t.Fatal(err)
	}
	opts.Guard = th
	return build(t, opts, store, src), th
}
