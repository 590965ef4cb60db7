package postgres_test

import (
	"context"
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// The PostgreSQL store lists and resets rl_counters by caller, target and
// definition.
func TestCounterAdmin(t *testing.T) {
	enforcetest.TestCounterAdmin(t, func(t *testing.T) enforcetest.AdminStore {
		return postgres.NewCounterStore(pgtest.NewStore(t).Pool())
	})
}

// The selectors read the parts the gates carry, which rl_take_024 stores
// beside each key: with the trigger that reads a row's parts out of its
// key disabled (it serves only rows written without parts, by binaries
// before rl_take_024), the counters are still listed and reset by caller,
// target and definition.
func TestCounterAdminFromTheGatesParts(t *testing.T) {
	enforcetest.TestCounterAdmin(t, func(t *testing.T) enforcetest.AdminStore {
		s := pgtest.NewStore(t)
		if _, err := s.Pool().Exec(context.Background(), `alter table rl_counters disable trigger rl_counters_parts_from_key`); err != nil {
			t.Fatal(err)
		}
		return postgres.NewCounterStore(s.Pool())
	})
}
