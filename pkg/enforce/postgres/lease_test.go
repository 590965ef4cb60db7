package postgres_test

import (
	"context"
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

func buildLeasing(t *testing.T, opts enforce.Options, counters enforce.CounterStore, src enforce.Source) *enforce.Enforcer {
	opts.Counters, opts.Source = counters, src
	if opts.Leases == nil {
		opts.Leases = &enforce.LeaseOptions{All: true}
	}
	e, err := enforce.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestLeases runs the lease checks over the PostgreSQL counter store:
// 4 replicas × 32 goroutines on one limit, taking what is left, give back,
// all or nothing and peek, for every algorithm.
func TestLeases(t *testing.T) {
	enforcetest.TestLeases(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, buildLeasing)
}

// TestAuthLockout runs the failed-credential lockout checks over the
// PostgreSQL counter store.
func TestAuthLockout(t *testing.T) {
	enforcetest.TestAuthLockout(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Build)
}
