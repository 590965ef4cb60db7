package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// The sliding window and the token bucket on PostgreSQL (rl_take, migration
// 008), at a controlled clock: every value below is worked out by hand from
// the integer arithmetic of docs/design/counters.md ("Every algorithm in the same rows").

// hour is an instant on an hour boundary near the wall clock, so windows
// of a minute or ten seconds start exactly there.
func hour() time.Time { return time.Now().Truncate(time.Hour).Add(time.Hour) }

func takeAll(t *testing.T, s enforce.CounterStore, reqs ...enforce.TakeRequest) []enforce.TakeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // bounds a hang only
	defer cancel()
	res, err := s.Take(ctx, reqs, time.Time{})
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("Take answered %d calls for %d", len(res), len(reqs))
	}
	return res
}

func takeOne(now time.Time, cost int64, gates ...enforce.CounterGate) enforce.TakeRequest {
	return enforce.TakeRequest{Gates: gates, Cost: cost, Consume: true, Now: now}
}

func bucket(key string, limit int64, window time.Duration, burst int64) enforce.CounterGate {
	return enforce.CounterGate{Key: key, Algorithm: enforce.AlgorithmTokenBucket, Window: window, Limit: limit,
		Burst: burst, Enforce: true}
}

func sliding(key string, limit int64, window time.Duration) enforce.CounterGate {
	return enforce.CounterGate{Key: key, Algorithm: enforce.AlgorithmSlidingWindow, Window: window, Limit: limit, Enforce: true}
}

func fixed(key string, limit int64, window time.Duration) enforce.CounterGate {
	return enforce.CounterGate{Key: key, Algorithm: enforce.AlgorithmFixedWindow, Window: window, Limit: limit, Enforce: true}
}

// TestTokenBucketBurstRefillNeverAbove: 10 per 10 s (one token a second),
// burst 3. At a frozen clock three calls pass and the fourth is denied with
// the bucket's TAT unchanged; a second later one token is back; after a
// long idle the bucket holds 3, never more; a cost of 2 with one token left
// takes nothing.
func TestTokenBucketBurstRefillNeverAbove(t *testing.T) {
	t.Parallel()
	s := postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	now := hour()
	g := bucket("tb|burst", 10, 10*time.Second, 3)
	for i := 1; i <= 3; i++ {
		r := takeAll(t, s, takeOne(now, 1, g))[0]
		if want := now.Add(time.Duration(i) * time.Second); !r.Allowed || !r.Room[0] || !r.States[0].TAT.Equal(want) {
			t.Fatalf("call %d at a frozen clock: allowed %v room %v TAT %v, want allowed, TAT now+%ds", i, r.Allowed, r.Room[0], r.States[0].TAT.Sub(now), i)
		}
	}
	r := takeAll(t, s, takeOne(now, 1, g))[0]
	if r.Allowed || r.Room[0] || !r.States[0].TAT.Equal(now.Add(3*time.Second)) {
		t.Fatalf("fourth call: allowed %v room %v TAT now+%v, want denied, TAT still now+3s", r.Allowed, r.Room[0], r.States[0].TAT.Sub(now))
	}
	// One token a second: at now+1s one call, not two.
	at := now.Add(time.Second)
	if r := takeAll(t, s, takeOne(at, 1, g))[0]; !r.Allowed || !r.States[0].TAT.Equal(now.Add(4*time.Second)) {
		t.Fatalf("after 1 s: allowed %v TAT now+%v, want allowed, TAT now+4s", r.Allowed, r.States[0].TAT.Sub(now))
	}
	if r := takeAll(t, s, takeOne(at, 1, g))[0]; r.Allowed {
		t.Fatal("a second call after 1 s was allowed: one token refilled, not two")
	}
	// A cost of 2 with one token left (at now+2s the TAT is 2 s ahead: 3 - 2
	// tokens) takes nothing.
	at = now.Add(2 * time.Second)
	if r := takeAll(t, s, takeOne(at, 2, g))[0]; r.Allowed || !r.States[0].TAT.Equal(now.Add(4*time.Second)) {
		t.Fatalf("cost 2 with one token: allowed %v TAT now+%v, want denied and nothing taken", r.Allowed, r.States[0].TAT.Sub(now))
	}
	// Idle an hour: full at 3, never more.
	at = now.Add(time.Hour)
	n := 0
	for range 10 {
		if takeAll(t, s, takeOne(at, 1, g))[0].Allowed {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("after an hour idle %d calls passed at one instant, want the burst, 3", n)
	}
}

// TestTokenBucketRowExpiresWhenFull: one row per key, never removed by the
// sweep before the bucket is full again (its TAT), and removed at the
// latest one refill of the burst (tau, here 5 s) after.
func TestTokenBucketRowExpiresWhenFull(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	s := postgres.NewCounterStore(st.Pool())
	now := hour()
	g := bucket("tb|expiry", 60, time.Minute, 5)
	for range 4 {
		takeAll(t, s, takeOne(now, 1, g))
	}
	rows := counterRows(t, st, "tb|")
	if len(rows) != 1 || rows[0].WindowIndex != 0 || rows[0].Count != now.Add(4*time.Second).UnixNano() {
		t.Fatalf("rows after 4 takes: %+v, want one, window 0, count = TAT (now+4s in ns)", rows)
	}
	ctx := context.Background()
	if n, err := s.Sweep(ctx, now.Add(4*time.Second-time.Microsecond)); err != nil || n != 0 {
		t.Fatalf("sweep before the bucket is full removed %d (%v)", n, err)
	}
	if n, err := s.Sweep(ctx, now.Add(9*time.Second)); err != nil || n != 1 {
		t.Fatalf("sweep a burst's refill after the bucket is full removed %d (%v), want 1", n, err)
	}
	if r := takeAll(t, s, takeOne(now.Add(9*time.Second), 5, g))[0]; !r.Allowed {
		t.Fatal("a full bucket (its row swept) did not admit its burst")
	}
}

// TestSlidingWindowAcrossTheBoundary: 3 per 10 s, three calls at the end
// of one window. In the next window the previous one weighs
// prev * (W - e): denied until e = 3334 ms (3 * 6667 + 10000 = 30001 >
// 30000 at 3333 ms; 3 * 6666 + 10000 = 29998 at 3334 ms), where the fixed
// window admits 3 more at once.
func TestSlidingWindowAcrossTheBoundary(t *testing.T) {
	t.Parallel()
	s := postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	start := hour()
	g := sliding("sw|boundary", 3, 10*time.Second)
	f := fixed("fw|boundary", 3, 10*time.Second)
	end := start.Add(9500 * time.Millisecond)
	for range 3 {
		if r := takeAll(t, s, takeOne(end, 1, g), takeOne(end, 1, f)); !r[0].Allowed || !r[1].Allowed {
			t.Fatalf("a call at the end of the first window was denied: %+v", r)
		}
	}
	next := start.Add(10 * time.Second)
	fixedAllowed := 0
	for range 4 {
		if takeAll(t, s, takeOne(next, 1, f))[0].Allowed {
			fixedAllowed++
		}
	}
	if fixedAllowed != 3 {
		t.Fatalf("the fixed window admitted %d at the boundary, want 3 (6 within half a second)", fixedAllowed)
	}
	for _, e := range []time.Duration{0, time.Second, 3333 * time.Millisecond} {
		r := takeAll(t, s, takeOne(next.Add(e), 1, g))[0]
		if r.Allowed || r.States[0].Previous != 3 || r.States[0].Count != 0 {
			t.Fatalf("sliding at e=%v: allowed %v, state %+v, want denied, previous 3, count 0", e, r.Allowed, r.States[0])
		}
	}
	r := takeAll(t, s, takeOne(next.Add(3334*time.Millisecond), 1, g))[0]
	if !r.Allowed || r.States[0].Count != 1 || r.States[0].Previous != 3 {
		t.Fatalf("sliding at e=3334ms: allowed %v, state %+v, want allowed, count 1, previous 3", r.Allowed, r.States[0])
	}
}

// TestMixedAlgorithmsAllOrNothing: a token bucket with one token beside a
// sliding and a fixed window with room: the second call is denied by the
// bucket and takes nothing from the windows; a shadow bucket without room
// never denies.
func TestMixedAlgorithmsAllOrNothing(t *testing.T) {
	t.Parallel()
	s := postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	now := hour().Add(5 * time.Second)
	gates := []enforce.CounterGate{fixed("a|fixed", 5, time.Minute), sliding("b|sliding", 5, time.Minute),
		bucket("c|bucket", 1, time.Minute, 1)}
	if r := takeAll(t, s, takeOne(now, 1, gates...))[0]; !r.Allowed {
		t.Fatalf("first call denied: %+v", r)
	}
	r := takeAll(t, s, takeOne(now, 1, gates...))[0]
	if r.Allowed || !r.Room[0] || !r.Room[1] || r.Room[2] {
		t.Fatalf("second call: %+v, want denied by the bucket alone", r)
	}
	if r.States[0].Count != 1 || r.States[1].Count != 1 || !r.States[2].TAT.Equal(now.Add(time.Minute)) {
		t.Fatalf("second call's states %+v, want the windows at 1 (nothing taken) and the bucket's TAT now+1m", r.States)
	}
	shadow := gates[2]
	shadow.Enforce = false
	r = takeAll(t, s, takeOne(now, 1, gates[0], gates[1], shadow))[0]
	if !r.Allowed || r.Room[2] || r.States[0].Count != 2 || r.States[1].Count != 2 {
		t.Fatalf("with the bucket in shadow: %+v, want allowed, the bucket without room, the windows at 2", r)
	}
}

// TestBatchesDecideInOrder: one Take of many calls is decided call after
// call. Calls that all fit are written in one statement; a batch where a
// later call no longer fits, or where a sliding window's previous window is
// written by an earlier call of the same batch (calls on both sides of a
// boundary), is decided one call at a time: each outcome below is what the
// calls would get one Take each.
func TestBatchesDecideInOrder(t *testing.T) {
	t.Parallel()
	s := postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	now := hour().Add(5 * time.Second)

	// All fit: five calls on a bucket of 5, later calls a little later.
	g := bucket("batch|fit", 60, time.Minute, 5)
	var reqs []enforce.TakeRequest
	for i := range 5 {
		reqs = append(reqs, takeOne(now.Add(time.Duration(i)*100*time.Millisecond), 1, g))
	}
	res := takeAll(t, s, reqs...)
	for i, r := range res {
		// TAT = max(TAT, now_i) + 1 s: now+1s, +2s, ... (the bucket is behind)
		if want := now.Add(time.Duration(i+1) * time.Second); !r.Allowed || !r.States[0].TAT.Equal(want) {
			t.Fatalf("call %d of an all-fitting batch: allowed %v TAT now+%v, want now+%ds", i+1, r.Allowed, r.States[0].TAT.Sub(now), i+1)
		}
	}

	// Does not all fit: burst 3 and a shared fixed window, calls 4 and 5
	// denied by the bucket and taking nothing from the window.
	b := bucket("batch|over-b", 60, time.Minute, 3)
	f := fixed("batch|over-f", 100, time.Minute)
	reqs = reqs[:0]
	for range 5 {
		reqs = append(reqs, takeOne(now, 1, b, f))
	}
	res = takeAll(t, s, reqs...)
	for i, r := range res {
		if want := i < 3; r.Allowed != want {
			t.Fatalf("call %d of an over-full batch: allowed %v, want %v", i+1, r.Allowed, want)
		}
		if want := int64(min(i+1, 3)); r.States[1].Count != want {
			t.Fatalf("call %d of an over-full batch: the fixed window at %d, want %d", i+1, r.States[1].Count, want)
		}
	}

	// Calls on different counters: each decided on its own rows in one
	// statement, a full bucket's call denied without touching the others'.
	full, free, win := bucket("batch|full", 60, time.Minute, 1), bucket("batch|free", 60, time.Minute, 2),
		sliding("batch|win", 5, time.Minute)
	takeAll(t, s, takeOne(now, 1, full))
	res = takeAll(t, s, takeOne(now, 1, full, win), takeOne(now, 1, free), enforce.TakeRequest{Gates: []enforce.CounterGate{win},
		Cost: 5, Now: now})
	if res[0].Allowed || res[0].Room[0] || !res[0].Room[1] || res[0].States[1].Count != 0 {
		t.Fatalf("a call on a full bucket beside a window: %+v, want denied and the window untouched", res[0])
	}
	if !res[1].Allowed || !res[1].States[0].TAT.Equal(now.Add(time.Second)) {
		t.Fatalf("a call on a free bucket in the same batch: %+v, want allowed, TAT now+1s", res[1])
	}
	if !res[2].Allowed || res[2].States[0].Count != 0 {
		t.Fatalf("a peek of cost 5 on the window: %+v, want allowed and nothing taken", res[2])
	}

	// Across a boundary: two calls at the end of a window, then one at the
	// start of the next, on a sliding window of 2 per 10 s: the third sees
	// the first two as its previous window (weight 1 at e = 0) and is
	// denied.
	start := hour()
	sw := sliding("batch|sliding", 2, 10*time.Second)
	res = takeAll(t, s, takeOne(start.Add(9*time.Second), 1, sw), takeOne(start.Add(9*time.Second), 1, sw),
		takeOne(start.Add(10*time.Second), 1, sw))
	if !res[0].Allowed || !res[1].Allowed || res[2].Allowed || res[2].States[0].Previous != 2 {
		t.Fatalf("batch across a boundary: %+v, want allowed, allowed, denied with previous 2", res)
	}
}

// TestAlgorithmsExactAcrossReplicas: 64 goroutines on two pools (two
// replicas), batches of one to four calls, at a frozen clock on three
// gates of different algorithms: exactly the bucket's burst passes, and
// the windows count exactly what passed.
func TestAlgorithmsExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.NewMigratedDatabase(t)
	var stores []enforce.CounterStore
	for range 2 {
		st, err := store.Open(context.Background(), url, store.Opts{MaxConns: 8, ApplicationName: "rlctl-test"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		stores = append(stores, postgres.NewCounterStore(st.Pool()))
	}
	now := hour().Add(5 * time.Second)
	const burst = 50
	gates := []enforce.CounterGate{fixed("x|fixed", 1000, time.Minute), sliding("x|sliding", 1000, time.Minute),
		bucket("x|tb", 1, time.Hour, burst)}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			s := stores[i%2]
			for j := range 4 {
				reqs := make([]enforce.TakeRequest, 1+(i+j)%4)
				for k := range reqs {
					reqs[k] = takeOne(now, 1, gates...)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a hang only
				res, err := s.Take(ctx, reqs, time.Time{})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("goroutine %d: %w", i, err)
					return
				}
				for _, r := range res {
					if r.Allowed {
						allowed.Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := allowed.Load(); got != burst {
		t.Fatalf("%d calls passed across two replicas, want exactly the burst, %d", got, burst)
	}
	r := takeAll(t, stores[0], enforce.TakeRequest{Gates: gates, Cost: 1, Now: now})[0]
	if r.Allowed || r.States[0].Count != burst || r.States[1].Count != burst || !r.States[2].TAT.Equal(now.Add(burst*time.Hour)) {
		t.Fatalf("after the race: %+v, want the windows at %d and the bucket empty (TAT now+%dh)", r, burst, burst)
	}
}

func counterRows(t *testing.T, st *store.Store, prefix string) []store.CounterRow {
	t.Helper()
	var rows []store.CounterRow
	err := st.ReadTx(context.Background(), func(q *store.Queries) error {
		var err error
		rows, err = q.Counters(context.Background(), prefix, time.Unix(0, 0), 100)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
