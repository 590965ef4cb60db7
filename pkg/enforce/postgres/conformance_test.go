package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// The PostgreSQL counter store passes the conformance suite every counter
// store must pass, for every algorithm, each subtest on a fresh database.
func TestConformance(t *testing.T) {
	enforcetest.TestCounterStore(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	})
}

// A burst larger than the PostgreSQL store answers in time is shed, not
// decided by the fail policy.
func TestOverload(t *testing.T) {
	// Not parallel: the burst of 10,000 decisions judges the store by
	// a 2 s deadline, which the package's other tests, run beside it,
	// could starve (a fail-open the store did not cause).
	enforcetest.TestOverload(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Build)
}

// TestStalledStore runs the suite's stall check with rl_counters locked
// by another transaction (the takes wait on the lock): PostgreSQL's
// statement_timeout aborts them at their deadline, so a decision answered
// by the fail policy consumed nothing.
func TestStalledStore(t *testing.T) {
	enforcetest.TestStalledStore(t, func(t *testing.T) enforcetest.Stallable {
		pool := pgtest.NewStore(t).Pool()
		ctx := context.Background()
		var tx pgx.Tx
		stall := func() {
			var err error
			if tx, err = pool.Begin(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `lock table rl_counters in exclusive mode`); err != nil {
				t.Fatal(err)
			}
		}
		resume := func() {
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			if tx != nil {
				_ = tx.Rollback(ctx)
			}
		})
		return enforcetest.Stallable{Store: postgres.NewCounterStore(pool), Stall: stall, Resume: resume}
	}, enforcetest.Build)
}

// A store outage does not let a used-up caller through.
func TestFailOpenKeepsUsedUpGates(t *testing.T) {
	t.Parallel()
	enforcetest.TestFailOpenKeepsUsedUpGates(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Build)
}

// The PostgreSQL source declares it writes lockouts and counts
// quarantines, and does both.
func TestSourceCapabilities(t *testing.T) {
	t.Parallel()
	enforcetest.TestSourceCapabilities(t, func(t *testing.T) enforce.Source {
		return postgres.NewSource(pgtest.NewStore(t).Pool())
	})
}

// The fail policy degrade: two replicas on their shares during an
// outage, then their reports written to PostgreSQL.
func TestDegradedMode(t *testing.T) {
	t.Parallel()
	enforcetest.TestDegradedMode(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Build)
}
