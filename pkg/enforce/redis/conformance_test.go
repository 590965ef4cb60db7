package redis_test

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
)

// The Redis counter store passes the conformance suite every counter store
// must pass, for every algorithm, on a standalone server and on a cluster
// of three masters and three replicas (where the gates of one call live in
// different hash slots, decided in two phases).
func TestConformance(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestCounterStore(t, newStore)
	})
}

// TestFailPolicies runs the fail-policy checks with an Enforcer over the
// Redis store, made to fail or hang by enforcetest's wrappers.
func TestFailPolicies(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestFailPolicies(t, newStore, enforcetest.Build)
	})
}

// A burst larger than the Redis store answers in time is shed, not decided
// by the fail policy.
func TestOverload(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestOverload(t, newStore, enforcetest.Build)
	})
}

// A store outage does not let a used-up caller through.
func TestFailOpenKeepsUsedUpGates(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestFailOpenKeepsUsedUpGates(t, newStore, enforcetest.Build)
	})
}

// The fail policy degrade: two replicas on their shares during an
// outage, then their reports written to Redis.
func TestDegradedMode(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestDegradedMode(t, newStore, enforcetest.Build)
	})
}
