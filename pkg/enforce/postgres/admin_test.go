package postgres_test

import (
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
