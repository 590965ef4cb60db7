package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// TestTakeCounterRemovedWhileWaiting: a counter that the sweep removes
// after rl_take_012 read it and while it waits for its lock is created
// again and taken: the call is decided on a fresh count, alone and in a
// batch, and every gate of it counts once.
func TestTakeCounterRemovedWhileWaiting(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	now := time.Now()
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			prefix := fmt.Sprintf("removed%v|", batch)
			req := store.TakeRequest{Cost: 1, Consume: true}
			for i := range 3 {
				g := gate(fmt.Sprintf("%sg%d", prefix, i), 5, now)
				req.Gates = append(req.Gates, g)
				if _, err := s.Pool().Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at) values ($1, $2, 4, $3)`,
					g.Key, g.WindowIndex, g.ExpiresAt); err != nil {
					t.Fatal(err)
				}
			}
			reqs := []store.TakeRequest{req}
			if batch {
				reqs = append(reqs, takeOne(prefix+"other", 5, now))
			}
			removed := req.Gates[1]
			res, err := takeWhileRemoving(ctx, t, s, reqs, removed)
			if err != nil {
				t.Fatal(err)
			}
			if want := []int64{5, 1, 5}; !res[0].Allowed || fmt.Sprint(res[0].Counts) != fmt.Sprint(want) {
				t.Fatalf("got %+v, want allowed with counts %v (the removed counter counted afresh)", res[0], want)
			}
			var n int64
			if err := s.Pool().QueryRow(ctx, `select count from rl_counters where key = $1 and window_index = $2`,
				removed.Key, removed.WindowIndex).Scan(&n); err != nil || n != 1 {
				t.Fatalf("the removed counter holds %d (%v), want 1", n, err)
			}
		})
	}
}

// takeWhileRemoving decides reqs while another transaction holds g's row
// locked; once the decision waits for that lock, the transaction deletes the
// row (as the sweep would) and commits.
func takeWhileRemoving(ctx context.Context, t *testing.T, s *store.Store, reqs []store.TakeRequest, g store.Gate) ([]store.TakeResult, error) {
	t.Helper()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // committed below
	var pid int32
	if err := tx.QueryRow(ctx, `select pg_backend_pid() from rl_counters where key = $1 and window_index = $2 for update`, g.Key, g.WindowIndex).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		res []store.TakeResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := s.TakeBatch(ctx, reqs, time.Time{})
		done <- answer{res, err}
	}()
	for {
		var waiting bool
		err := s.Pool().QueryRow(ctx, `select exists (select 1 from pg_stat_activity
			where datname = current_database() and $1 = any (pg_blocking_pids(pid)) and query like '%rl_take%')`, pid).Scan(&waiting)
		if err != nil {
			t.Fatalf("waiting for the decision to block: %v", err)
		}
		if waiting {
			break
		}
		select {
		case a := <-done:
			t.Fatalf("the decision finished without waiting for the locked row: %+v, %v", a.res, a.err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	if _, err := tx.Exec(ctx, `delete from rl_counters where key = $1 and window_index = $2`, g.Key, g.WindowIndex); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	return a.res, a.err
}
