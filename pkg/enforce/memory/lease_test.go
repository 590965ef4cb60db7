package memory_test

import (
	"context"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// buildEnforcer is enforcetest.BuildEnforcer with enforce.New; leases,
// when set, turns them on for every gate.
func buildEnforcer(leases bool) enforcetest.BuildEnforcer {
	return func(t *testing.T, opts enforce.Options, counters enforce.CounterStore, src enforce.Source) *enforce.Enforcer {
		opts.Counters, opts.Source = counters, src
		if leases && opts.Leases == nil {
			opts.Leases = &enforce.LeaseOptions{All: true}
		}
		e, err := enforce.New(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e
	}
}

// TestLeases runs the lease checks over the in-memory store.
func TestLeases(t *testing.T) {
	t.Parallel()
	enforcetest.TestLeases(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, buildEnforcer(true))
}

// TestFailPoliciesWithLeases: the fail policies hold with every gate
// leased (a store failing while a block is refilled follows them).
func TestFailPoliciesWithLeases(t *testing.T) {
	t.Parallel()
	enforcetest.TestFailPolicies(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, buildEnforcer(true))
}

// TestAuthLockout runs the failed-credential lockout checks over the
// in-memory store, with and without leases.
func TestAuthLockout(t *testing.T) {
	t.Parallel()
	for _, leases := range []bool{false, true} {
		t.Run(map[bool]string{false: "no leases", true: "leases"}[leases], func(t *testing.T) {
			t.Parallel()
			enforcetest.TestAuthLockout(t, func(t *testing.T) enforce.CounterStore { return memory.New() }, buildEnforcer(leases))
		})
	}
}
