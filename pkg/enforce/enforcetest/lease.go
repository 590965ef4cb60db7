package enforcetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// leaseClock is a clock tests move by hand.
type leaseClock struct{ ns atomic.Int64 }

func (c *leaseClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *leaseClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newLeaseClock() *leaseClock {
	c := &leaseClock{}
	c.ns.Store(windowStart(time.Hour).Add(10 * time.Second).UnixNano())
	return c
}

// leaseState limits mcp_server "s" to limit calls per window (seconds),
// counting with algo (a token bucket's burst is its limit); callerLimit,
// when not 0, also limits each caller to that many calls per hour.
func leaseState(algo enforce.Algorithm, limit, window, callerLimit int) enforce.State {
	s := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s",
		WindowSeconds: window, MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Algorithm: string(algo)}
	s.ID = s.Key()
	defs := append(Sentinels(), s)
	if callerLimit > 0 {
		c := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "all",
			WindowSeconds: 3600, UserMaxRequests: &callerLimit, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true}
		c.ID = c.Key()
		defs = append(defs, c)
	}
	return enforce.State{Definitions: defs}
}

// TestLeases checks Enforcers over pkg/enforce/lease's layer, each
// replica's layer wrapping a store built by newStore (one per subtest,
// shared by that subtest's replicas, as replicas share one), for every
// algorithm:
//
//   - exactness: 4 enforcers (replicas) × 32 goroutines on one limit admit
//     at most the limit and at least the limit less the bound, (replicas -
//     1) × the block;
//   - cost and refills: when the shared counter cannot give a whole block,
//     a lease takes what is left, so one replica admits the whole limit;
//   - give back: what a replica leased and did not use is available to
//     another once the lease ends (the layer's Close, or its lease time
//     passing);
//   - all or nothing: a call whose leased gate had room but whose store
//     gate denied takes nothing from the leased one;
//   - peek never takes a block;
//
// and, once, a definition's lease mode (ratelimit.Definition.Lease): never
// is not leased even with every key leased (the shared counter holds each
// call), always is leased on the first call of a key that is not hot,
// never wins over always and always over auto on a bucket definitions
// share, and a change from auto to never retires the key's lease.
//
// build builds each Enforcer over its layer (enforcetest.Build does).
// Leases need a store that declares GiveBack (lease.New refuses it
// otherwise).
func TestLeases(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer, opts ...Opts) {
	t.Helper()
	for _, algo := range optsOf(opts).algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			t.Run("replicas admit at most the limit and at least the limit less the bound", func(t *testing.T) {
				t.Parallel()
				leaseReplicas(t, algo, newStore, build)
			})
			t.Run("a lease takes what is left", func(t *testing.T) {
				t.Parallel()
				leaseWhatIsLeft(t, algo, newStore, build)
			})
			t.Run("unused capacity is given back", func(t *testing.T) {
				t.Parallel()
				leaseGiveBack(t, algo, newStore, build)
			})
			if algo == enforce.AlgorithmTokenBucket {
				t.Run("a bucket's give-back is never fuller than full", func(t *testing.T) {
					t.Parallel()
					leaseBucketNotFuller(t, newStore, build)
				})
			}
			t.Run("all or nothing with a gate of the store", func(t *testing.T) {
				t.Parallel()
				leaseAllOrNothing(t, algo, newStore, build)
			})
			t.Run("three gates expiring together under load", func(t *testing.T) {
				t.Parallel()
				leaseManyExpire(t, algo, newStore, build)
			})
			t.Run("peek takes no block", func(t *testing.T) {
				t.Parallel()
				leasePeek(t, algo, newStore, build)
			})
		})
	}
	t.Run("lease modes", func(t *testing.T) {
		t.Parallel()
		leaseModes(t, newStore, build)
	})
}

// leaseOpts lease every key for lt, blocks for replicas, on clock.
func leaseOpts(clock *leaseClock, lt time.Duration, replicas int) lease.Options {
	return lease.Options{All: true, Time: lt, Replicas: replicas, Now: clock.now, Timeout: 5 * time.Second}
}

// newLayer wraps store in a lease layer, closed when the test ends: after
// the Enforcers built over it, whose Cleanups were registered later.
func newLayer(t *testing.T, store enforce.CounterStore, opts lease.Options) *lease.Store {
	t.Helper()
	l, err := lease.New(store, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// leased builds one replica with leases: an Enforcer (plainOpts on
// opts.Now's clock) over a lease layer over store.
func leased(t *testing.T, build BuildEnforcer, clock *leaseClock, opts lease.Options, store enforce.CounterStore, src enforce.Source) (*enforce.Enforcer, *lease.Store) {
	t.Helper()
	l := newLayer(t, store, opts)
	return build(t, plainOpts(clock), l, src), l
}

func leaseCheck(t *testing.T, e *enforce.Enforcer, c enforce.Call) enforce.Decision {
	t.Helper()
	d, err := e.Check(context.Background(), c)
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	return d
}

// drain checks c on e until it is denied and returns how many were
// allowed (at most max).
func drain(t *testing.T, e *enforce.Enforcer, c enforce.Call, most int) int {
	t.Helper()
	n := 0
	for n < most {
		if !leaseCheck(t, e, c).Allowed {
			return n
		}
		n++
	}
	return n
}

func leaseReplicas(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	const (
		replicas   = 4
		goroutines = 32
		limit      = 1000
		window     = 60
		perG       = 40 // each replica calls 1,280 times: more than the limit
	)
	clock := newLeaseClock() // still: no window turns, no bucket refills
	store := newStore(t)
	src := StaticSource(leaseState(algo, limit, window, 0))
	lt := 2 * time.Second
	gate := enforce.CounterGate{Algorithm: algo, Window: window * time.Second, Limit: limit, Burst: limit}
	block := lease.BlockSize(gate, lt, replicas)
	if block < 2 {
		t.Fatalf("block %d: the check needs a real block", block)
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	es := make([]*enforce.Enforcer, replicas)
	for r := range replicas {
		es[r], _ = leased(t, build, clock, leaseOpts(clock, lt, replicas), store, src)
	}
	for r := range replicas {
		for range goroutines {
			wg.Go(func() {
				for range perG {
					d, err := es[r].Check(context.Background(), policyCall("s"))
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						admitted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	bound := int64(replicas-1) * block
	got := admitted.Load()
	if got > limit || got < limit-bound {
		t.Fatalf("admitted %d of a limit of %d across %d replicas (block %d): want between %d and %d",
			got, limit, replicas, block, limit-bound, limit)
	}
	t.Logf("admitted %d of %d (block %d, bound %d)", got, limit, block, bound)
}

func leaseWhatIsLeft(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	// One replica, a block of 50 of 100: calls of cost 30 take 30, 30,
	// then (the shared counter holding 60 of the two blocks used, 40
	// left) the 40 that are left, and the fourth is denied: 90 admitted.
	clock := newLeaseClock()
	store := newStore(t)
	e, _ := leased(t, build, clock, leaseOpts(clock, time.Hour, 1), store, StaticSource(leaseState(algo, 100, 60, 0)))
	c := policyCall("s")
	c.Cost = 30
	var allowed []bool
	for range 4 {
		allowed = append(allowed, leaseCheck(t, e, c).Allowed)
	}
	if want := []bool{true, true, true, false}; !equalBools(allowed, want) {
		t.Fatalf("calls of cost 30 on a limit of 100: allowed %v, want %v", allowed, want)
	}
	c.Cost = 10
	if !leaseCheck(t, e, c).Allowed {
		t.Fatal("a call of cost 10 with 10 left in the block was denied")
	}
	if leaseCheck(t, e, c).Allowed {
		t.Fatal("a call of cost 10 past the limit was allowed")
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func leaseGiveBack(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	store := newStore(t)
	const limit = 100
	src := StaticSource(leaseState(algo, limit, 3600, 0))
	clock := newLeaseClock()
	c := policyCall("s")

	// B, without leases, takes 60; A leases a block of 25 (100 / (2 ×
	// 2)) and uses one; B gets the 15 the shared counter has left. (A
	// token bucket's block is given back only as far as it is still
	// ahead of now in the TAT the block's take left: B's 60 first put it
	// there, as a busy bucket is.)
	a, al := leased(t, build, clock, leaseOpts(clock, 30*time.Minute, 2), store, src) // rate × 30 min = 50, at most 25
	b := build(t, plainOpts(clock), store, src)
	if n := drain(t, b, c, 60); n != 60 {
		t.Fatalf("B admitted %d of its first 60", n)
	}
	if !leaseCheck(t, a, c).Allowed {
		t.Fatal("A's first call was denied")
	}
	if n := drain(t, b, c, limit); n != limit-60-25 {
		t.Fatalf("B admitted %d while A held a block: want %d", n, limit-60-25)
	}
	// A's lease time passes: its reaper gives back the 24 it did not use.
	clock.advance(31 * time.Minute)
	deadline := time.Now().Add(hangBound)
	for al.Stats().Returned < 24 {
		if time.Now().After(deadline) {
			t.Fatalf("%v after A's lease ended it had given back %d, want 24", hangBound, al.Stats().Returned)
		}
		time.Sleep(5 * time.Millisecond)
	}
	want := 24
	if algo == enforce.AlgorithmTokenBucket {
		want += int(int64(31*time.Minute) * limit / int64(time.Hour)) // what dripped back meanwhile: 51
	}
	if n := drain(t, b, c, limit); n != want {
		t.Fatalf("B admitted %d after A's lease ended: want %d (what A did not use)", n, want)
	}
}

func leaseAllOrNothing(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	// The target gate (1,000 per minute) is leased; the caller gate (3 an
	// hour, too small to lease with 2 replicas) is the store's. Calls
	// past the caller's 3 must take nothing from the target.
	store := newStore(t)
	clock := newLeaseClock()
	src := StaticSource(leaseState(algo, 1000, 60, 3))
	e, layer := leased(t, build, clock, leaseOpts(clock, time.Minute, 2), store, src)
	c := policyCall("s")
	if n := drain(t, e, c, 10); n != 3 {
		t.Fatalf("admitted %d calls of a caller limited to 3", n)
	}
	e2 := build(t, plainOpts(clock), store, src)
	d, err := e2.Peek(context.Background(), enforce.Call{Username: "other", TargetType: ratelimit.EntityMCPServer, TargetName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	// The shared counter holds one block (250 = 1000 / (2 × 2)); of it 3
	// were used and the denied calls put back what they took.
	for _, g := range d.Gates {
		if g.Axis == ratelimit.AxisTarget && g.Remaining != 1000-250 {
			t.Fatalf("the target's shared counter has %d left, want %d (one block taken)", g.Remaining, 1000-250)
		}
	}
	// Closing A (its Enforcer, then its layer) gives back the 247 it did
	// not use: 997 left.
	e.Close()
	layer.Close()
	d, err = e2.Peek(context.Background(), enforce.Call{Username: "other", TargetType: ratelimit.EntityMCPServer, TargetName: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range d.Gates {
		if g.Axis == ratelimit.AxisTarget && g.Remaining != 997 {
			t.Fatalf("after Close the target has %d left, want 997: the 3 admitted calls, nothing of the denied ones", g.Remaining)
		}
	}
}

func leasePeek(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	store := newStore(t)
	clock := newLeaseClock()
	src := StaticSource(leaseState(algo, 1000, 60, 0))
	e, layer := leased(t, build, clock, leaseOpts(clock, time.Minute, 1), store, src)
	c := policyCall("s")
	for range 3 {
		d, err := e.Peek(context.Background(), c)
		if err != nil || !d.Allowed {
			t.Fatalf("peek: allowed %v, err %v", d.Allowed, err)
		}
	}
	if s := layer.Stats(); s.Refills != 0 {
		t.Fatalf("peeks took %d blocks, want none", s.Refills)
	}
	d, _ := e.Peek(context.Background(), c)
	if d.Remaining != 1000 {
		t.Fatalf("after peeks the gate has %d left, want 1000", d.Remaining)
	}
}

func leaseBucketNotFuller(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	// 100 an hour (one token every 36 s), burst 100. A leases 25 tokens
	// from a full bucket and uses one; 20 minutes later those 25 would
	// have dripped back anyway, and B (no leases) finds the bucket full
	// and takes all 100. When A's lease ends at 30 minutes it must give
	// nothing back: at 31 minutes the bucket holds what dripped since B
	// took (11 minutes: 18 tokens), not 18 plus A's 24 unused.
	store := newStore(t)
	const limit = 100
	src := StaticSource(leaseState(enforce.AlgorithmTokenBucket, limit, 3600, 0))
	clock := newLeaseClock()
	c := policyCall("s")
	a, al := leased(t, build, clock, leaseOpts(clock, 30*time.Minute, 2), store, src)
	b := build(t, plainOpts(clock), store, src)
	if !leaseCheck(t, a, c).Allowed {
		t.Fatal("A's first call was denied")
	}
	clock.advance(20 * time.Minute)
	if n := drain(t, b, c, 2*limit); n != limit {
		t.Fatalf("B admitted %d from a bucket full again: want %d", n, limit)
	}
	clock.advance(11 * time.Minute) // A's lease has ended
	deadline := time.Now().Add(hangBound)
	for al.Stats().Leases > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("A's lease was not retired %v after it ended", hangBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := drain(t, b, c, 2*limit); n != 18 {
		t.Fatalf("B admitted %d after A's lease ended: want 18 (what dripped in 11 minutes; A's unused tokens had dripped back already)", n)
	}
}

func leaseManyExpire(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	// Two leased gates per call (the target and the caller, both large),
	// leases of 5 ms on the real clock, 32 goroutines for 300 calls each:
	// blocks expire and are refilled together over and over. Every call
	// must return (a call refilling one lease while waiting for another's
	// refill must not wait on a call doing the reverse).
	store := newStore(t)
	src := StaticSource(leaseState(algo, 1_000_000, 3600, 1_000_000))
	layer := newLayer(t, store, lease.Options{All: true, Time: 5 * time.Millisecond, Timeout: 5 * time.Second})
	e := build(t, enforce.Options{BackendTimeout: 5 * time.Second, SweepInterval: -1}, layer, src)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			c := policyCall("s")
			c.Username = []string{"u", "v"}[g%2]
			for range 300 {
				if _, err := e.Check(context.Background(), c); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * hangBound):
		t.Fatalf("calls on leased gates had not returned after %v: a refill waits forever", 4*hangBound)
	}
}
