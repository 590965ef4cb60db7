package redis_test

import (
	"context"
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
)

func buildLeasing(t *testing.T, opts enforce.Options, counters enforce.CounterStore, src enforce.Source) *enforce.Enforcer {
	opts.Counters, opts.Source = counters, src
	if opts.Leases == nil {
		opts.Leases = &enforce.LeaseOptions{All: true}
	}
	e, err := enforce.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestLeases runs the lease checks over Redis, standalone and cluster: 4
// replicas × 32 goroutines on one limit, taking what is left, give back,
// all or nothing and peek, for every algorithm.
func TestLeases(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestLeases(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) }, buildLeasing)
		})
	}
}

// TestFailPoliciesWithLeases: the fail policies hold with every gate
// leased (a store failing while a block is refilled follows them).
func TestFailPoliciesWithLeases(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestFailPolicies(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) }, buildLeasing)
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
