package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/lease"
)

// leaseConfig is the decisions' leases for hot keys (off unless
// --lease-time is set; docs/operations.md, "Leases for hot keys").
type leaseConfig struct {
	time     *time.Duration
	replicas *int
	hotRate  *int
	keys     *string
}

func leaseFlags(fs *flag.FlagSet, getenv func(string) string) (leaseConfig, error) {
	timeDef, err := envDuration(getenv, "RLAPI_LEASE_TIME", 0)
	if err != nil {
		return leaseConfig{}, err
	}
	replicasDef, err := envInt(getenv, "RLAPI_LEASE_REPLICAS", 1)
	if err != nil {
		return leaseConfig{}, err
	}
	hotDef, err := envInt(getenv, "RLAPI_LEASE_HOT_RATE", 100)
	if err != nil {
		return leaseConfig{}, err
	}
	keysDef := getenv("RLAPI_LEASE_KEYS")
	if keysDef == "" {
		keysDef = "hot"
	}
	return leaseConfig{
		time: fs.Duration("lease-time", timeDef,
			"leases for hot keys: how long a replica may decide a key from a block of its capacity taken from the shared counter; 0: off (RLAPI_LEASE_TIME)"),
		replicas: fs.Int("lease-replicas", replicasDef,
			"the older spelling of --replicas: how many rlapi replicas share the counters; a block is at most a limit / (2 x replicas) (RLAPI_LEASE_REPLICAS)"),
		hotRate: fs.Int("lease-hot-rate", hotDef,
			"a key this replica sees more than this many times in one second is leased (RLAPI_LEASE_HOT_RATE)"),
		keys: fs.String("lease-keys", keysDef, "which keys are leased: hot or all (RLAPI_LEASE_KEYS)"),
	}, nil
}

// options checks the flags and returns the lease layer's options (nil:
// leases off); run completes them (clock, timeout, logger, metrics) and
// wraps the decisions' counter store in the layer.
func (l leaseConfig) options() (*lease.Options, error) {
	switch {
	case *l.time < 0:
		return nil, fmt.Errorf("%w: --lease-time (RLAPI_LEASE_TIME): must not be negative (got %s)", errUsage, *l.time)
	case *l.replicas < 1:
		return nil, fmt.Errorf("%w: --lease-replicas (RLAPI_LEASE_REPLICAS): must be at least 1 (got %d)", errUsage, *l.replicas)
	case *l.hotRate < 1:
		return nil, fmt.Errorf("%w: --lease-hot-rate (RLAPI_LEASE_HOT_RATE): must be at least 1 (got %d)", errUsage, *l.hotRate)
	case *l.keys != "hot" && *l.keys != "all":
		return nil, fmt.Errorf("%w: --lease-keys (RLAPI_LEASE_KEYS): must be hot or all (got %q)", errUsage, *l.keys)
	}
	if *l.time == 0 {
		return nil, nil
	}
	return &lease.Options{Time: *l.time, Replicas: *l.replicas, HotRate: *l.hotRate, All: *l.keys == "all"}, nil
}
