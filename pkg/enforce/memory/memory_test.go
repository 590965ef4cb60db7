package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	enforcetest.TestCounterStore(t, func(t *testing.T) enforce.CounterStore { return memory.New() })
}

func gate(key string, limit int64) enforce.CounterGate {
	return enforce.CounterGate{Key: key, Algorithm: enforce.AlgorithmFixedWindow, Window: time.Second, Limit: limit, Enforce: true}
}

// TestRefusesWhatItCannotCount: a batch with a gate the store cannot count
// fails whole, wrapping ErrNotApplied, and takes nothing for its other
// calls.
func TestRefusesWhatItCannotCount(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	bad := []struct {
		name string
		req  enforce.TakeRequest
	}{
		{"unknown algorithm", enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
			{Key: "k", Algorithm: "leaky_bucket", Window: time.Second, Limit: 1, Enforce: true}}}},
		{"window of half a second", enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
			{Key: "k", Algorithm: enforce.AlgorithmFixedWindow, Window: 500 * time.Millisecond, Limit: 1}}}},
		{"cost 0", enforce.TakeRequest{Cost: 0, Consume: true, Now: now, Gates: []enforce.CounterGate{gate("k", 1)}}},
		{"negative limit", enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{gate("k", -1)}}},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			s := memory.New()
			good := enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{gate("good", 5)}}
			_, err := s.Take(context.Background(), []enforce.TakeRequest{good, b.req}, time.Time{})
			if !errors.Is(err, enforce.ErrNotApplied) {
				t.Fatalf("err = %v, want ErrNotApplied", err)
			}
			if s.Len() != 0 {
				t.Errorf("a refused batch left %d counters", s.Len())
			}
		})
	}
}

// TestMemoryStaysBounded: a gateway that never calls Sweep, taking on a
// fresh key every call while time moves on, holds a bounded number of
// counters; and a key's window is replaced, not accumulated, as it rolls.
func TestMemoryStaysBounded(t *testing.T) {
	t.Parallel()
	s := memory.New()
	ctx := context.Background()
	start := time.Unix(1_800_000_000, 0)
	const perSecond = 500
	for sec := range 200 {
		for i := range perSecond {
			now := start.Add(time.Duration(sec)*time.Second + time.Duration(i)*time.Millisecond)
			req := enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
				gate(fmt.Sprintf("k%d-%d", sec, i), 10), gate("steady", 1_000_000)}}
			if _, err := s.Take(ctx, []enforce.TakeRequest{req}, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 100,000 keys were taken; at most the live second plus what each
	// shard may hold before it sweeps itself (twice its survivors, at
	// least 1024) remain.
	if n := s.Len(); n > 64*1024+perSecond {
		t.Errorf("%d counters held after 100,000 one-second keys without a Sweep", n)
	}
	removed, err := s.Sweep(ctx, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 || removed == 0 {
		t.Errorf("after a Sweep past every window: %d counters left, %d removed", s.Len(), removed)
	}
}

// TestPreviousWindowDropped: opening a key's next window drops its last
// one at once.
func TestPreviousWindowDropped(t *testing.T) {
	t.Parallel()
	s := memory.New()
	start := time.Unix(1_800_000_000, 0)
	for sec := range 50 {
		req := enforce.TakeRequest{Cost: 1, Consume: true, Now: start.Add(time.Duration(sec) * time.Second),
			Gates: []enforce.CounterGate{gate("k", 10)}}
		if _, err := s.Take(context.Background(), []enforce.TakeRequest{req}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Len(); n != 1 {
		t.Errorf("one key over 50 windows holds %d counters, want 1", n)
	}
}

// TestCanceledContext: a context already ended fails with ErrTimedOut and
// takes nothing.
func TestCanceledContext(t *testing.T) {
	t.Parallel()
	s := memory.New()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := enforce.TakeRequest{Cost: 1, Consume: true, Now: time.Unix(1_800_000_000, 0), Gates: []enforce.CounterGate{gate("k", 10)}}
	if _, err := s.Take(ctx, []enforce.TakeRequest{req}, time.Time{}); !errors.Is(err, enforce.ErrTimedOut) {
		t.Errorf("err = %v, want ErrTimedOut", err)
	}
	if s.Len() != 0 {
		t.Errorf("a canceled Take left %d counters", s.Len())
	}
}

// TestHelpers: the fault wrappers over this store behave as documented.
func TestHelpers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := []enforce.TakeRequest{{Cost: 1, Consume: true, Now: time.Unix(1_800_000_000, 0), Gates: []enforce.CounterGate{gate("k", 10)}}}
	mem := memory.New()
	f := enforcetest.Failing(mem, enforcetest.ErrInjected)
	if _, err := f.Take(ctx, req, time.Time{}); !errors.Is(err, enforcetest.ErrInjected) {
		t.Errorf("failing store: err = %v", err)
	}
	f.Repair()
	if res, err := f.Take(ctx, req, time.Time{}); err != nil || res[0].States[0].Count != 1 {
		t.Errorf("repaired store: %v %v, want count 1 (the failed call took nothing)", res, err)
	}
	h := enforcetest.Hanging(mem)
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := h.Take(hctx, req, time.Now()); done <- err }()
	<-h.Entered()
	cancel()
	if err := <-done; !errors.Is(err, enforce.ErrOutcomeUnknown) {
		t.Errorf("hanging store: err = %v, want ErrOutcomeUnknown", err)
	}
	h.Release()
	if res, err := h.Take(ctx, req, time.Time{}); err != nil || res[0].States[0].Count != 2 {
		t.Errorf("released store: %v %v, want count 2", res, err)
	}
}

func algoGate(key string, algo enforce.Algorithm, limit int64) enforce.CounterGate {
	return enforce.CounterGate{Key: key, Algorithm: algo, Window: time.Second, Limit: limit, Burst: limit, Enforce: true}
}

// TestMemoryStaysBoundedEveryAlgorithm: as TestMemoryStaysBounded, for
// each algorithm: fresh keys every call, no Sweep, memory stays bounded;
// a Sweep once every window has ended and every bucket refilled leaves
// nothing.
func TestMemoryStaysBoundedEveryAlgorithm(t *testing.T) {
	t.Parallel()
	for _, algo := range []enforce.Algorithm{enforce.AlgorithmFixedWindow, enforce.AlgorithmSlidingWindow, enforce.AlgorithmTokenBucket} {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			s := memory.New()
			ctx := context.Background()
			start := time.Unix(1_800_000_000, 0)
			const perSecond = 500
			for sec := range 200 {
				for i := range perSecond {
					now := start.Add(time.Duration(sec)*time.Second + time.Duration(i)*time.Millisecond)
					req := enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
						algoGate(fmt.Sprintf("k%d-%d", sec, i), algo, 10), algoGate("steady", algo, 1_000_000)}}
					if _, err := s.Take(ctx, []enforce.TakeRequest{req}, time.Time{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Sliding windows live one window longer: two seconds of keys.
			if n := s.Len(); n > 64*1024+2*perSecond {
				t.Errorf("%d counters held after 100,000 one-second keys without a Sweep", n)
			}
			removed, err := s.Sweep(ctx, start.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if algo == enforce.AlgorithmTokenBucket {
				// "steady" took 100,000 of a million a second: full within the hour.
				if s.Len() != 0 || removed == 0 {
					t.Errorf("after a Sweep once every bucket is full: %d counters left, %d removed", s.Len(), removed)
				}
				return
			}
			if s.Len() != 0 || removed == 0 {
				t.Errorf("after a Sweep past every window: %d counters left, %d removed", s.Len(), removed)
			}
		})
	}
}

// TestCountersPerKey: over 50 windows one fixed-window key holds one
// counter, a sliding-window key two (the current and the previous
// window), a token bucket one.
func TestCountersPerKey(t *testing.T) {
	t.Parallel()
	for algo, want := range map[enforce.Algorithm]int{enforce.AlgorithmFixedWindow: 1, enforce.AlgorithmSlidingWindow: 2, enforce.AlgorithmTokenBucket: 1} {
		s := memory.New()
		start := time.Unix(1_800_000_000, 0)
		for sec := range 50 {
			req := enforce.TakeRequest{Cost: 1, Consume: true, Now: start.Add(time.Duration(sec) * time.Second),
				Gates: []enforce.CounterGate{algoGate("k", algo, 10)}}
			if _, err := s.Take(context.Background(), []enforce.TakeRequest{req}, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.Len(); n != want {
			t.Errorf("%s: one key over 50 windows holds %d counters, want %d", algo, n, want)
		}
	}
}

// TestSweepEveryAlgorithm: Sweep removes a token bucket once it is full
// and not before, and a sliding window once the window after it has
// ended (it weighs in until then).
func TestSweepEveryAlgorithm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Unix(1_800_000_000, 0)
	s := memory.New()
	tb := enforce.CounterGate{Key: "tb", Algorithm: enforce.AlgorithmTokenBucket, Window: 10 * time.Second, Limit: 10, Burst: 5, Enforce: true}
	sw := enforce.CounterGate{Key: "sw", Algorithm: enforce.AlgorithmSlidingWindow, Window: 10 * time.Second, Limit: 10, Enforce: true}
	req := enforce.TakeRequest{Cost: 3, Consume: true, Now: start, Gates: []enforce.CounterGate{sw, tb}}
	if _, err := s.Take(ctx, []enforce.TakeRequest{req}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	// The bucket is full 3 s on (3 tokens of 1 s); the sliding window's
	// counter weighs in until 20 s on.
	for _, c := range []struct {
		at      time.Duration
		removed int64
	}{{3*time.Second - 1, 0}, {3 * time.Second, 1}, {20*time.Second - 1, 0}, {20 * time.Second, 1}} {
		n, err := s.Sweep(ctx, start.Add(c.at))
		if err != nil || n != c.removed {
			t.Errorf("Sweep at %v removed %d (%v), want %d", c.at, n, err, c.removed)
		}
	}
}

// TestMaxKeysBoundsAFlood: three times MaxKeys distinct keys within one
// window never hold more than MaxKeys counters, every call is allowed (a
// full store denies nothing), Evicted counts what made room, and a key
// used all along, throttled at its limit, keeps its count: the flood's
// keys, each used once, go first.
func TestMaxKeysBoundsAFlood(t *testing.T) {
	t.Parallel()
	const maxKeys = 640
	s := memory.New(memory.Options{MaxKeys: maxKeys})
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	take := func(g enforce.CounterGate) enforce.TakeResult {
		t.Helper()
		res, err := s.Take(ctx, []enforce.TakeRequest{{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{g}}}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		return res[0]
	}
	hot := enforce.CounterGate{Key: "hot", Algorithm: enforce.AlgorithmFixedWindow, Window: time.Hour, Limit: 3, Enforce: true}
	for i := range 3 * maxKeys {
		if i%20 == 0 {
			if r := take(hot); r.Allowed != (i < 60) {
				t.Fatalf("hot key, call %d: allowed %v, want %v (limit 3: its count must survive the flood)", i/20+1, r.Allowed, i < 60)
			}
		}
		g := enforce.CounterGate{Key: fmt.Sprintf("flood-%d", i), Algorithm: enforce.AlgorithmFixedWindow, Window: time.Hour, Limit: 10, Enforce: true}
		if r := take(g); !r.Allowed {
			t.Fatalf("flood key %d denied: a full store must not deny", i)
		}
		if n := s.Len(); n > maxKeys {
			t.Fatalf("after %d distinct keys the store holds %d counters, more than MaxKeys %d", i+1, n, maxKeys)
		}
	}
	if got, want := s.Evicted(), int64(3*maxKeys+1-s.Len()); got != want {
		t.Errorf("Evicted() = %d, want %d (keys taken less keys held)", got, want)
	}
}
