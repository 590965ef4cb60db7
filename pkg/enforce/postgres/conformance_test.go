package postgres_test

import (
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// The PostgreSQL counter store passes the conformance suite every counter
// store must pass, each subtest on a fresh database. It counts the fixed
// window only until migration 008 brings rl_take the other algorithms;
// then the Opts go and the suite checks every algorithm.
func TestConformance(t *testing.T) {
	enforcetest.TestCounterStore(t, func(t *testing.T) enforce.CounterStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	}, enforcetest.Opts{Algorithms: []enforce.Algorithm{enforce.AlgorithmFixedWindow}})
}
