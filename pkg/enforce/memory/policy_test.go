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
	// Not parallel: the burst of 10,000 decisions judges the store by
	// a 2 s deadline, which the package's other tests, run beside it,
	// could starve (a fail-open the store did not cause).
	enforcetest.TestOverload(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, enforcetest.Build)
}

// A store outage does not let a used-up caller through.
func TestFailOpenKeepsUsedUpGates(t *testing.T) {
	t.Parallel()
	enforcetest.TestFailOpenKeepsUsedUpGates(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, enforcetest.Build)
}

// The fail policy degrade: two replicas on their shares, then the
// reports, on the in-memory store.
func TestDegradedMode(t *testing.T) {
	t.Parallel()
	enforcetest.TestDegradedMode(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, enforcetest.Build)
}
