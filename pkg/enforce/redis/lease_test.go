package redis_test

import (
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
)

// TestLeases runs the lease checks over Redis, standalone and cluster: 4
// replicas × 32 goroutines on one limit, taking what is left, give back,
// all or nothing and peek, for every algorithm.
func TestLeases(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestLeases(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) }, enforcetest.BuildLeasing)
		})
	}
}

// TestFailPoliciesWithLeases: the fail policies hold with every gate
// leased (a store failing while a block is refilled follows them).
func TestFailPoliciesWithLeases(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestFailPolicies(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) }, enforcetest.BuildLeasing)
		})
	}
}

// TestAuthLockout runs the failed-credential lockout checks over Redis,
// standalone and cluster (the lockout's key and the call's are in
// different slots there).
func TestAuthLockout(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestAuthLockout(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) }, enforcetest.Build)
		})
	}
}
