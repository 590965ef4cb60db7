package memory_test

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// TestFailPolicies runs the fail-policy checks with an Enforcer over the
// in-memory store, made to fail or hang by enforcetest's wrappers.
func TestFailPolicies(t *testing.T) {
	t.Parallel()
	enforcetest.TestFailPolicies(t,
		func(t *testing.T) enforce.CounterStore { return memory.New() },
		enforcetest.Build)
}

// A burst larger than the store answers in time is shed, not decided by the
// fail policy.
func TestOverload(t *testing.T) {
	t.Parallel()
	enforcetest.TestOverload(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, enforcetest.Build)
}

// A store outage does not let a used-up caller through.
func TestFailOpenKeepsUsedUpGates(t *testing.T) {
	t.Parallel()
	enforcetest.TestFailOpenKeepsUsedUpGates(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, enforcetest.Build)
}
