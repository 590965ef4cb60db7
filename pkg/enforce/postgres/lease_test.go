package postgres_test

import (
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// TestLeases runs the lease checks (each replica an Enforcer over
// pkg/enforce/lease's layer) over the PostgreSQL counter store:
// 4 replicas × 32 goroutines on one limit, taking what is left, give back,
// all or nothing and peek, for every algorithm.
func TestLeases(t *testing.T) {
	enforcetest.TestLeases(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Build)
}

// TestAuthLockout runs the failed-credential lockout checks over the
// PostgreSQL counter store.
func TestAuthLockout(t *testing.T) {
	enforcetest.TestAuthLockout(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Build)
}
