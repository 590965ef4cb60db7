package redis_test

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
)

// TestLeases runs the lease checks (each replica an Enforcer over
// pkg/enforce/lease's layer) over Redis, standalone and cluster: 4
// replicas × 32 goroutines on one limit, taking what is left, give back,
// all or nothing and peek, for every algorithm.
func TestLeases(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestLeases(t, newStore, enforcetest.Build)
	})
}

// TestFailPoliciesWithLeases: the fail policies hold with every gate
// leased (a store failing while a block is refilled follows them).
func TestFailPoliciesWithLeases(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestFailPolicies(t, newStore, enforcetest.BuildLeasing)
	})
}

// TestAuthLockout runs the failed-credential lockout checks over Redis,
// standalone and cluster (the lockout's key and the call's are in
// different slots there).
func TestAuthLockout(t *testing.T) {
	onEachTarget(t, func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore) {
		enforcetest.TestAuthLockout(t, newStore, enforcetest.Build)
	})
}
