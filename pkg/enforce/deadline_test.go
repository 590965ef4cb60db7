package enforce_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
)

// TestTimedOutDecisionsConsumeNothing locks rl_counters for two seconds
// while fail-closed calls keep coming, then compares what the table holds
// with what the callers were told: every count stored is a call answered
// "allowed", and no call answered "fail-closed" left a count behind once
// the lock was gone.
func TestTimedOutDecisionsConsumeNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{FailClosed: true, BackendTimeout: 100 * time.Millisecond})
	f.Def(target("mcp_server", "s", 60, 1_000_000))
	ctx := context.Background()
	var allowed, failClosed, other atomic.Int64
	decide := func() {
		d, _ := f.E.Check(ctx, user("u", "s"))
		switch {
		case d.Allowed && d.Reason == enforce.ReasonAllowed:
			allowed.Add(1)
		case d.Reason == enforce.ReasonFailClosed:
			failClosed.Add(1)
		default:
			other.Add(1)
		}
	}
	decide() // the counter row exists

	tx, err := f.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // released below
	if _, err := tx.Exec(ctx, `lock table rl_counters in exclusive mode`); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
					decide()
				}
			}
		})
	}
	time.Sleep(2 * time.Second)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // calls pass again
	close(stop)
	wg.Wait()
	// Let any statement still running in the database finish before
	// counting (the deadline only bounds a hang).
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var busy int
		if err := f.Store.Pool().QueryRow(ctx, `select count(*) from pg_stat_activity
			where datname = current_database() and state <> 'idle' and query like '%rl_take%' and pid <> pg_backend_pid()`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if busy == 0 || time.Now().After(end) {
			break
		}
	}
	if failClosed.Load() == 0 {
		t.Fatal("no call hit the lock: the test proves nothing")
	}
	if other.Load() != 0 {
		t.Errorf("%d decisions neither allowed nor fail-closed", other.Load())
	}
	if got, want := f.counter(counterkey.KindTarget.Prefix()), allowed.Load(); got != want {
		t.Errorf("the target's counter holds %d for %d calls answered allowed (%d answered fail-closed)", got, want, failClosed.Load())
	}
	t.Logf("%d allowed, %d fail-closed", allowed.Load(), failClosed.Load())
}
