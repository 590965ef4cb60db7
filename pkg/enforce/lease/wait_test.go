package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// heldStore is the in-memory store whose Takes, while held, wait until
// released: a refill in flight for as long as the test wants.
type heldStore struct {
	*memory.Store
	mu      sync.Mutex
	held    chan struct{} // nil: not held
	entered chan struct{} // one send per Take that waits
}

func (s *heldStore) hold() {
	s.mu.Lock()
	s.held = make(chan struct{})
	s.mu.Unlock()
}

func (s *heldStore) release() {
	s.mu.Lock()
	close(s.held)
	s.held = nil
	s.mu.Unlock()
}

func (s *heldStore) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	if held != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-held
	}
	return s.Store.Take(ctx, reqs, deadline)
}

// TestLeaseCallsDuringRefillAreDecidedWhenItEnds: calls on a hot key that
// arrive while its block is being refilled are all decided as soon as the
// refill's round trip ends. The clock stands still, so a call that waited
// for anything but that round trip (a lease time, the reaper) would never
// return: the deadline only bounds that hang.
func TestLeaseCallsDuringRefillAreDecidedWhenItEnds(t *testing.T) {
	t.Parallel()
	e, _, store, advance, ctx, call := heldLeaseEnforcer(t)
	// The blocks' lease time ends; the next call refills them, and its
	// round trip is held.
	advance(2 * time.Second)
	store.hold()
	const calls = 16
	type answer struct {
		d   enforce.Decision
		err error
	}
	answers := make(chan answer, calls)
	check := func() {
		d, err := e.Check(ctx, call)
		answers <- answer{d, err}
	}
	go check()
	select {
	case <-store.entered:
	case <-ctx.Done():
		t.Fatal("the refill never reached the store")
	}
	for range calls - 1 {
		go check()
	}
	store.release()
	for i := range calls {
		select {
		case a := <-answers:
			if a.err != nil || !a.d.Allowed {
				t.Fatalf("call %d: allowed %v, err %v; want every call allowed once the refill ended", i, a.d.Allowed, a.err)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d calls were still waiting after the refill ended (the clock stood still)", calls-i, calls)
		}
	}
}

// TestLeaseReaperLeavesARefillAlone: the reaper passing while a hot key's
// blocks are being refilled neither waits for that refill nor, once it
// ends, gives back and drops the blocks it just took: the next calls are
// decided from them, without another refill.
func TestLeaseReaperLeavesARefillAlone(t *testing.T) {
	t.Parallel()
	e, layer, store, advance, ctx, call := heldLeaseEnforcer(t)
	before := layer.Stats()
	advance(2 * time.Second)
	store.hold()
	answered := make(chan error, 1)
	go func() {
		d, err := e.Check(ctx, call)
		if err == nil && !d.Allowed {
			err = errors.New("denied")
		}
		answered <- err
	}()
	select {
	case <-store.entered:
	case <-ctx.Done():
		t.Fatal("the refill never reached the store")
	}
	reaped := make(chan struct{})
	go func() {
		layer.Reap(time.Date(2030, 1, 1, 0, 0, 12, 0, time.UTC)) // the clock's time: the old blocks ended
		close(reaped)
	}()
	select {
	case <-reaped:
	case <-ctx.Done():
		store.release()
		t.Fatal("the reaper waited for the refill in flight")
	}
	store.release()
	if err := <-answered; err != nil {
		t.Fatalf("the refilling call: %v", err)
	}
	refilled := layer.Stats()
	if refilled.Leases != 3 || refilled.Refills != before.Refills+3 {
		t.Fatalf("after the refill %+v, want 3 leases and %d refills", refilled, before.Refills+3)
	}
	for i := range 10 {
		if d, err := e.Check(ctx, call); err != nil || !d.Allowed {
			t.Fatalf("call %d after the refill: allowed %v, err %v", i, d.Allowed, err)
		}
	}
	if after := layer.Stats(); after.Leases != 3 || after.Refills != refilled.Refills || after.Returned != refilled.Returned {
		t.Fatalf("after 10 more calls %+v, want the refill's 3 leases used as they were (%+v): no block given back, none taken again", after, refilled)
	}
}

// heldLeaseEnforcer is an Enforcer over a lease layer leasing three gates
// of one hot call (limits of 1,000,000 an hour, 1 s leases) over a
// heldStore, at a clock that moves only by advance, after one call took
// the first blocks.
func heldLeaseEnforcer(t *testing.T) (*enforce.Enforcer, *lease.Store, *heldStore, func(time.Duration), context.Context, enforce.Call) {
	t.Helper()
	var (
		clockMu sync.Mutex
		now     = time.Date(2030, 1, 1, 0, 0, 10, 0, time.UTC)
	)
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
	high := 1_000_000
	user := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "hot",
		WindowSeconds: 3600, UserMaxRequests: &high, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true}
	ctg := user
	ctg.Axis = ratelimit.AxisCallerTarget
	tgt := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s",
		WindowSeconds: 3600, MaxRequests: &high, Enabled: true, Mode: ratelimit.ModeEnforce}
	defs := []ratelimit.Definition{user, ctg, tgt}
	for i := range defs {
		defs[i].ID = defs[i].Key()
	}
	store := &heldStore{Store: memory.New(), entered: make(chan struct{}, 1)}
	layer, err := lease.New(store, lease.Options{All: true, Time: time.Second, Replicas: 4, Now: clock, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(layer.Close)
	e, err := enforce.New(context.Background(), enforce.Options{Counters: layer, Now: clock,
		Source:        enforcetest.StaticSource(enforce.State{Definitions: append(enforcetest.Sentinels(), defs...)}),
		SweepInterval: -1, BackendTimeout: 5 * time.Second, CacheTTL: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a hang only
	t.Cleanup(cancel)
	call := enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	if d, err := e.Check(ctx, call); err != nil || !d.Allowed {
		t.Fatalf("first call: allowed %v, err %v", d.Allowed, err)
	}
	if st := layer.Stats(); st.Leases != 3 {
		t.Fatalf("after the first call %d leases, want 3 (every gate leased)", st.Leases)
	}

	advance := func(d time.Duration) {
		clockMu.Lock()
		now = now.Add(d)
		clockMu.Unlock()
	}
	return e, layer, store, advance, ctx, call
}
