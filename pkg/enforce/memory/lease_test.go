package memory_test

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// TestLeases runs the lease checks (each replica an Enforcer over
// pkg/enforce/lease's layer) over the in-memory store.
func TestLeases(t *testing.T) {
	t.Parallel()
	enforcetest.TestLeases(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, enforcetest.Build)
}

// TestFailPoliciesWithLeases: the fail policies hold with every gate
// leased (a store failing while a block is refilled follows them).
func TestFailPoliciesWithLeases(t *testing.T) {
	t.Parallel()
	enforcetest.TestFailPolicies(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, enforcetest.BuildLeasing)
}

// TestAuthLockout runs the failed-credential lockout checks over the
// in-memory store, with and without leases.
func TestAuthLockout(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]enforcetest.BuildEnforcer{"no leases": enforcetest.Build, "leases": enforcetest.BuildLeasing} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			enforcetest.TestAuthLockout(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, build)
		})
	}
}
