package postgres_test

import (
	"testing"

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
	t.Parallel()
	enforcetest.TestOverload(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Build)
}
