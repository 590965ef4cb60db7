package enforce_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// breakCounters makes every counter round trip fail until the returned
// function repairs it.
func breakCounters(t *testing.T, f *fixture) func() {
	t.Helper()
	if _, err := f.Store.Pool().Exec(context.Background(), `alter function rl_take_024 rename to rl_take_gone`); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := f.Store.Pool().Exec(context.Background(), `alter function rl_take_gone rename to rl_take_024`); err != nil {
			t.Fatal(err)
		}
	}
}

func TestFailPolicies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		globalClosed   bool
		definitionFail bool
		want           string
	}{
		{"fail open by default", false, false, enforce.ReasonFailOpen},
		{"fail closed globally", true, false, enforce.ReasonFailClosed},
		{"fail closed per definition", false, true, enforce.ReasonFailClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, enforce.Options{FailClosed: c.globalClosed})
			d := target("mcp_server", "s", 60, 100)
			d.FailClosed = c.definitionFail
			f.Def(d, target("mcp_server", "other", 60, 100))
			repair := breakCounters(t, f)
			got, err := f.E.Check(context.Background(), user("u", "s"))
			if err == nil {
				t.Error("backend failure not reported")
			}
			if got.Reason != c.want || got.Allowed != (c.want == enforce.ReasonFailOpen) {
				t.Errorf("decision = %+v, want %s", got, c.want)
			}
			if c.definitionFail {
				// Only calls that hit the fail-closed definition are denied.
				if other, _ := f.E.Check(context.Background(), user("u", "other")); !other.Allowed {
					t.Errorf("a call not touching the fail-closed definition was denied: %+v", other)
				}
			}
			repair()
			if got := f.Check(user("u", "s")); !got.Allowed || got.Reason != enforce.ReasonAllowed {
				t.Errorf("after repair: %+v", got)
			}
		})
	}
}

// TestSlowBackendTimesOut locks the counters so the round trip
// blocks; the backend timeout turns the wait into the fail policy.
func TestSlowBackendTimesOut(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{BackendTimeout: 100 * time.Millisecond})
	f.Def(target("mcp_server", "s", 60, 100))
	ctx := context.Background()
	// The backend blocks until released: the counters are locked against
	// writes by a transaction this test holds until the decision is in, so
	// nothing but the backend timeout can end the call, however slowly
	// the machine schedules it. (No setup decision is taken first: on a
	// busy machine it could itself run into the 100 ms timeout.)
	tx, err := f.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // cleanup; releases the lock
	if _, err := tx.Exec(ctx, `lock table rl_counters in exclusive mode`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		d   enforce.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := f.E.Check(ctx, user("u", "s"))
		done <- result{d, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Minute): // bounds a hang only
		t.Fatal("the check is still blocked on the locked counters: the backend timeout did not end it")
	}
	if r.err == nil || r.d.Reason != enforce.ReasonFailOpen || !r.d.Allowed {
		t.Errorf("decision = %+v (err %v), want fail-open after the timeout", r.d, r.err)
	}
	// The lock was held throughout: the call ended while the backend was
	// still blocked, so the timeout is what ended it.
	if _, err := tx.Exec(ctx, `select 1`); err != nil {
		t.Errorf("the locking transaction did not survive the check: %v", err)
	}
}

// TestDatabaseConnectionsKilled terminates every connection of the enforcer
// mid-run: decisions follow the fail policy, nothing panics, and
// enforcement recovers.
func TestDatabaseConnectionsKilled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 60, 1_000_000_000))
	ctx := context.Background()
	stop := make(chan struct{})
	done := make(chan [3]int)
	go func() {
		var counts [3]int // allowed, fail-open, other
		for {
			select {
			case <-stop:
				done <- counts
				return
			default:
			}
			d, _ := f.E.Check(ctx, user("u", "s"))
			switch d.Reason {
			case enforce.ReasonAllowed:
				counts[0]++
			case enforce.ReasonFailOpen:
				counts[1]++
			default:
				counts[2]++
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	killer, err := pgx.Connect(ctx, f.Store.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	for range 3 {
		if _, err := killer.Exec(ctx, `select pg_terminate_backend(pid) from pg_stat_activity
			where datname = current_database() and pid <> pg_backend_pid()`); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	close(stop)
	counts := <-done
	if counts[2] != 0 {
		t.Errorf("%d decisions neither allowed nor fail-open", counts[2])
	}
	// Recovered: decisions are real again, and changes still arrive.
	if d := f.Check(user("u", "s")); d.Reason != enforce.ReasonAllowed {
		t.Errorf("after the outage: %+v", d)
	}
	t.Logf("during the run: %d allowed, %d fail-open", counts[0], counts[1])
}
