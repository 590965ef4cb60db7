package enforce_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// waitFor polls cond until it holds; the deadline only bounds a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type takeReply struct {
	res enforce.TakeResult
	err error
}

// TestOneFailingCallDoesNotDecideItsBatch puts three calls into one round
// trip, one of which PostgreSQL refuses (its cost overflows a counter):
// the other two are decided as they would be alone, an exhausted caller
// stays denied and a caller with room is allowed, and only the refused call
// reports a failure (for its fail policy).
func TestOneFailingCallDoesNotDecideItsBatch(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	ctx := context.Background()
	b := enforce.NewBatcher(postgres.NewCounterStore(st.Pool()))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { b.Work(wctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })

	now := time.Now()
	one := func(key string, limit, cost int64) enforce.TakeRequest {
		return enforce.TakeRequest{Cost: cost, Consume: true, Now: now, Gates: []enforce.CounterGate{{Key: key,
			Algorithm: enforce.AlgorithmFixedWindow, Window: time.Hour, Limit: limit, Enforce: true}}}
	}
	take := func(req enforce.TakeRequest) takeReply {
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := b.Take(tctx, req)
		return takeReply{res, err}
	}
	for _, k := range []string{"blocker", "alice", "poison"} {
		if r := take(one(k, 1, 1)); r.err != nil || !r.res.Allowed {
			t.Fatalf("first call on %s: %+v", k, r)
		}
	}
	// Hold the blocker's row so that both round trips in flight wait on
	// it, a call's own (the first finds none in flight) and the one
	// worker's, while the three calls queue behind them.
	tx, err := st.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // released below
	if _, err := tx.Exec(ctx, `select * from rl_counters where key = 'blocker' for update`); err != nil {
		t.Fatal(err)
	}
	blocker := make(chan takeReply, 2)
	blockers := func(n int) {
		go func() { blocker <- take(one("blocker", 100, 1)) }()
		waitFor(t, fmt.Sprintf("%d round trips to wait on the blocker's row", n), func() bool {
			var waiting int
			err := st.Pool().QueryRow(ctx, `select count(*) from pg_stat_activity
				where datname = current_database() and wait_event_type = 'Lock' and query like '%rl_take%'`).Scan(&waiting)
			return err == nil && waiting == n
		})
	}
	blockers(1)
	blockers(2)
	replies := make([]chan takeReply, 3)
	reqs := []enforce.TakeRequest{one("alice", 1, 1), one("poison", 100, math.MaxInt64), one("bob", 1, 1)}
	for i, req := range reqs {
		replies[i] = make(chan takeReply, 1)
		go func() { replies[i] <- take(req) }()
	}
	waitFor(t, "three queued calls", func() bool { return b.Queued() == 3 })
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := <-blocker; r.err != nil || !r.res.Allowed {
			t.Errorf("blocker: %+v", r)
		}
	}
	alice, poison, bob := <-replies[0], <-replies[1], <-replies[2]
	if alice.err != nil || alice.res.Allowed {
		t.Errorf("alice, past her limit: %+v, want denied by her counter", alice)
	}
	if bob.err != nil || !bob.res.Allowed {
		t.Errorf("bob, under his limit: %+v, want allowed", bob)
	}
	if poison.err == nil {
		t.Errorf("the overflowing call: %+v, want its own failure", poison)
	}
}

// A decision that finds no round trip in flight makes its own, in its own
// goroutine: answered here by a batcher none of whose workers runs.
func TestLoneDecisionRunsItsOwnRoundTrip(t *testing.T) {
	t.Parallel()
	b := enforce.NewBatcher(memory.New())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := enforce.TakeRequest{Cost: 1, Consume: true, Now: time.Now(), Gates: []enforce.CounterGate{{Key: "lone",
		Algorithm: enforce.AlgorithmFixedWindow, Window: time.Hour, Limit: 1, Enforce: true}}}
	for i, want := range []bool{true, false} {
		res, err := b.Take(ctx, req)
		if err != nil || res.Allowed != want {
			t.Fatalf("call %d: allowed %v, err %v; want allowed %v", i+1, res.Allowed, err, want)
		}
	}
	if n := b.Queued(); n != 0 {
		t.Errorf("%d calls left queued", n)
	}
}
