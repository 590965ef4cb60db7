package enforcetest

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A definition's say in leases (ratelimit.Definition.Lease): the checks
// TestLeases runs once per store, beside its per-algorithm ones.
func leaseModes(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	t.Run("lease never is not leased, even with every key leased", func(t *testing.T) {
		t.Parallel()
		leaseNeverNotLeased(t, newStore, build)
	})
	t.Run("lease always is leased on the first call, not hot", func(t *testing.T) {
		t.Parallel()
		leaseAlwaysFirstCall(t, newStore, build)
	})
	t.Run("a shared bucket: never wins over always, always over auto", func(t *testing.T) {
		t.Parallel()
		leaseSharedBucket(t, newStore, build)
	})
	t.Run("auto then never: the key's lease is retired, calls go to the store", func(t *testing.T) {
		t.Parallel()
		leaseAutoThenNever(t, newStore, build)
	})
}

// modeTarget is a target mcp_server definition of 1,000 calls an hour
// with the given lease mode.
func modeTarget(name, lease string) ratelimit.Definition {
	limit := 1000
	d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: name,
		WindowSeconds: 3600, MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Lease: lease}
	d.ID = d.Key()
	return d
}

// modeGroup is a caller definition for everyone of limit calls an hour
// per user, with the given lease mode.
func modeGroup(name string, limit int, lease string) ratelimit.Definition {
	d := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: name,
		WindowSeconds: 3600, UserMaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true, Lease: lease}
	d.ID = d.Key()
	return d
}

func modeState(defs ...ratelimit.Definition) enforce.State {
	return enforce.State{Definitions: append(Sentinels(), defs...)}
}

// plainOpts are an Enforcer's options on clock; built over the store
// itself, not a lease layer, the Enforcer reads the shared counters as
// the store holds them.
func plainOpts(clock *leaseClock) enforce.Options {
	return enforce.Options{Now: clock.now, BackendTimeout: 5 * time.Second, SweepInterval: -1, CacheTTL: 24 * time.Hour}
}

// sharedRemaining is what the shared counter of the gate of definition id
// has left, as an Enforcer without leases peeks it for c.
func sharedRemaining(t *testing.T, e *enforce.Enforcer, c enforce.Call, id string) int64 {
	t.Helper()
	d, err := e.Peek(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range d.Gates {
		if g.DefinitionID == id {
			return g.Remaining
		}
	}
	t.Fatalf("peek of %+v has no gate of %s: %+v", c, id, d.Gates)
	return 0
}

func leaseNeverNotLeased(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	// Every key is leased (All), blocks of 500: the auto target takes a
	// block on its first call, the never target none, ever; the shared
	// counter of the never target holds each call, one by one.
	store := newStore(t)
	clock := newLeaseClock()
	never, auto := modeTarget("billing", ratelimit.LeaseNever), modeTarget("s", "")
	src := StaticSource(modeState(never, auto))
	e, layer := leased(t, build, clock, leaseOpts(clock, time.Hour, 1), store, src)
	plain := build(t, plainOpts(clock), store, src)
	c := policyCall("billing")
	for i := range 5 {
		if !leaseCheck(t, e, c).Allowed {
			t.Fatalf("call %d on the never target was denied", i+1)
		}
		if got := sharedRemaining(t, plain, c, never.ID); got != int64(1000-i-1) {
			t.Fatalf("after %d calls the never target's shared counter has %d left, want %d: every call counted on it", i+1, got, 1000-i-1)
		}
	}
	if s := layer.Stats(); s.Leases != 0 || s.Refills != 0 {
		t.Fatalf("calls on the never target leased: %+v, want no lease and no block taken", s)
	}
	// The control: the same Enforcer leases the auto target at once.
	if !leaseCheck(t, e, policyCall("s")).Allowed {
		t.Fatal("the auto target's first call was denied")
	}
	if s := layer.Stats(); s.Leases != 1 || s.Refills != 1 {
		t.Fatalf("after a call on the auto target %+v, want its lease (1 lease, 1 block)", s)
	}
	if got := sharedRemaining(t, plain, policyCall("s"), auto.ID); got != 500 {
		t.Fatalf("the auto target's shared counter has %d left, want 500 (one block of 500 taken)", got)
	}
}

func leaseAlwaysFirstCall(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	// Only hot keys are leased, and hot is over 1,000 calls a second: one
	// call on the always target takes a block, calls on the auto target
	// take none.
	store := newStore(t)
	clock := newLeaseClock()
	always, auto := modeTarget("s", ratelimit.LeaseAlways), modeTarget("cold", "")
	src := StaticSource(modeState(always, auto))
	opts := leaseOpts(clock, time.Hour, 1)
	opts.All, opts.HotRate = false, 1000
	e, layer := leased(t, build, clock, opts, store, src)
	plain := build(t, plainOpts(clock), store, src)
	for range 3 {
		if !leaseCheck(t, e, policyCall("cold")).Allowed {
			t.Fatal("a call on the auto target was denied")
		}
	}
	if s := layer.Stats(); s.Leases != 0 || s.Refills != 0 {
		t.Fatalf("3 calls on a cold auto target leased: %+v", s)
	}
	if !leaseCheck(t, e, policyCall("s")).Allowed {
		t.Fatal("the always target's first call was denied")
	}
	if s := layer.Stats(); s.Leases != 1 || s.Refills != 1 {
		t.Fatalf("after one call on the always target %+v, want its lease (1 lease, 1 block)", s)
	}
	if got := sharedRemaining(t, plain, policyCall("s"), always.ID); got != 500 {
		t.Fatalf("the always target's shared counter has %d left, want 500 (one block of 500 taken)", got)
	}
	for range 10 {
		if !leaseCheck(t, e, policyCall("s")).Allowed {
			t.Fatal("a call decided from the always target's block was denied")
		}
	}
	if s := layer.Stats(); s.Refills != 1 {
		t.Fatalf("10 more calls took %d blocks in all, want the first one only", s.Refills)
	}
	if got := sharedRemaining(t, plain, policyCall("cold"), auto.ID); got != 997 {
		t.Fatalf("the auto target's shared counter has %d left, want 997 (its 3 calls, one by one)", got)
	}
}

func leaseSharedBucket(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	// Two definitions for everyone of one window and algorithm share the
	// bucket of each user; the lower limit counts, and its definition
	// names the gate. The call has no target definition: the caller's
	// bucket is its only gate.
	c := policyCall("none")
	t.Run("never over always", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		clock := newLeaseClock()
		low, high := modeGroup("low", 1000, ratelimit.LeaseAlways), modeGroup("high", 2000, ratelimit.LeaseNever)
		src := StaticSource(modeState(low, high))
		e, layer := leased(t, build, clock, leaseOpts(clock, time.Hour, 1), store, src) // every key leased
		plain := build(t, plainOpts(clock), store, src)
		for range 3 {
			if !leaseCheck(t, e, c).Allowed {
				t.Fatal("a call on the shared bucket was denied")
			}
		}
		if s := layer.Stats(); s.Leases != 0 || s.Refills != 0 {
			t.Fatalf("the bucket of an always and a never definition was leased: %+v", s)
		}
		if got := sharedRemaining(t, plain, c, low.ID); got != 997 {
			t.Fatalf("the shared bucket has %d left, want 997 (3 calls, one by one)", got)
		}
	})
	t.Run("always over auto", func(t *testing.T) {
		t.Parallel()
		store := newStore(t)
		clock := newLeaseClock()
		low, high := modeGroup("low", 1000, ""), modeGroup("high", 2000, ratelimit.LeaseAlways)
		src := StaticSource(modeState(low, high))
		opts := leaseOpts(clock, time.Hour, 1)
		opts.All, opts.HotRate = false, 1000 // hot keys only: never reached
		e, layer := leased(t, build, clock, opts, store, src)
		plain := build(t, plainOpts(clock), store, src)
		if !leaseCheck(t, e, c).Allowed {
			t.Fatal("the first call on the shared bucket was denied")
		}
		if s := layer.Stats(); s.Leases != 1 || s.Refills != 1 {
			t.Fatalf("after the first call %+v, want the bucket leased (an always definition shares it)", s)
		}
		if got := sharedRemaining(t, plain, c, low.ID); got != 500 {
			t.Fatalf("the shared bucket (limit 1,000, the auto definition's) has %d left, want 500 (one block)", got)
		}
	})
}

func leaseAutoThenNever(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	store := newStore(t)
	clock := newLeaseClock()
	auto := modeTarget("s", "")
	src := StaticSource(modeState(auto))
	e, layer := leased(t, build, clock, leaseOpts(clock, time.Hour, 1), store, src)
	plain := build(t, plainOpts(clock), store, src)
	c := policyCall("s")
	for range 2 {
		if !leaseCheck(t, e, c).Allowed {
			t.Fatal("a call on the auto target was denied")
		}
	}
	if s := layer.Stats(); s.Leases != 1 || s.Refills != 1 {
		t.Fatalf("after 2 calls on the auto target %+v, want its lease", s)
	}
	// The definition now says never; the Enforcer reloads it.
	src.Set(modeState(modeTarget("s", ratelimit.LeaseNever)))
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !leaseCheck(t, e, c).Allowed {
		t.Fatal("the first call after the change was denied")
	}
	if s := layer.Stats(); s.Leases != 0 || s.Refills != 1 {
		t.Fatalf("after the change to never %+v, want the lease retired and no block taken since", s)
	}
	// What the block held unused went back (leases run only over a store
	// that gives back).
	want := int64(1000 - 3)
	if s := layer.Stats(); s.Returned != 498 {
		t.Fatalf("retiring the lease gave back %d, want the 498 its block had left", s.Returned)
	}
	for i := range 4 {
		if got := sharedRemaining(t, plain, c, auto.ID); got != want-int64(i) {
			t.Fatalf("after %d calls since the change the shared counter has %d left, want %d: each call counted on it", i+1, got, want-int64(i))
		}
		if !leaseCheck(t, e, c).Allowed {
			t.Fatal("a call after the change was denied")
		}
	}
	if s := layer.Stats(); s.Leases != 0 || s.Refills != 1 {
		t.Fatalf("after 4 more calls %+v, want no lease and no block taken since the change", s)
	}
}
