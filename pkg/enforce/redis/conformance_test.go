package redis_test

import (
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
)

// The Redis counter store passes the conformance suite every counter store
// must pass, for every algorithm, on a standalone server and on a cluster
// of three masters and three replicas (where the gates of one call live in
// different hash slots, decided in two phases).
func TestConformance(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestCounterStore(t, func(t *testing.T) enforce.CounterStore {
				return openStore(t, tg.env)
			})
		})
	}
}

// TestFailPolicies runs the fail-policy checks with an Enforcer over the
// Redis store, made to fail or hang by enforcetest's wrappers.
func TestFailPolicies(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestFailPolicies(t,
				func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) },
				enforcetest.Build)
		})
	}
}

// A burst larger than the Redis store answers in time is shed, not decided
// by the fail policy.
func TestOverload(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestOverload(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) }, enforcetest.Build)
		})
	}
}

// A store outage does not let a used-up caller through.
func TestFailOpenKeepsUsedUpGates(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestFailOpenKeepsUsedUpGates(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) }, enforcetest.Build)
		})
	}
}
