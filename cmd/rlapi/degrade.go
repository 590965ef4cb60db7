package main

import (
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/degrade"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// failPolicyConfig is the decisions' default fail policy and how many
// replicas share the counters (docs/operations.md, "Degraded mode").
type failPolicyConfig struct {
	policy   *string
	closed   *bool
	replicas *int
}

func failPolicyFlags(fs *flag.FlagSet, getenv func(string) string) (failPolicyConfig, error) {
	replicasDef, err := envInt(getenv, "RLAPI_REPLICAS", 0)
	if err != nil {
		return failPolicyConfig{}, err
	}
	return failPolicyConfig{
		policy: fs.String("fail-policy", getenv("RLAPI_FAIL_POLICY"),
			"what decisions get when the counter store fails, for definitions that name no fail_policy: open (the default), closed or degrade (each replica enforces its share of every limit; needs --replicas) (RLAPI_FAIL_POLICY)"),
		closed: fs.Bool("fail-closed", envBool(getenv, "RLAPI_FAIL_CLOSED"),
			"the older spelling of --fail-policy closed (RLAPI_FAIL_CLOSED)"),
		replicas: fs.Int("replicas", replicasDef,
			"how many rlapi replicas share the counters: the degraded mode's share of a limit is limit / replicas, rounded up, and leases size their blocks by it (--lease-replicas is the older spelling); 0: not known (RLAPI_REPLICAS)"),
	}, nil
}

// check checks the flags, after parsing, and makes --replicas and
// --lease-replicas one setting: either given sets both, both given must
// agree. It returns the default fail policy and the replica count (0:
// not known).
func (c failPolicyConfig) check(fs *flag.FlagSet, getenv func(string) string, leases leaseConfig) (string, int, error) {
	policy := *c.policy
	switch {
	case policy != "" && !slices.Contains(ratelimit.FailPolicies(), policy):
		return "", 0, fmt.Errorf("%w: --fail-policy (RLAPI_FAIL_POLICY): must be one of open, closed or degrade (got %q)", errUsage, policy)
	case *c.closed && policy != "" && policy != ratelimit.FailPolicyClosed:
		return "", 0, fmt.Errorf("%w: --fail-closed (RLAPI_FAIL_CLOSED) and --fail-policy %s (RLAPI_FAIL_POLICY) disagree: give one", errUsage, policy)
	case *c.closed:
		policy = ratelimit.FailPolicyClosed
	case policy == "":
		policy = ratelimit.FailPolicyOpen
	}
	if *c.replicas < 0 {
		return "", 0, fmt.Errorf("%w: --replicas (RLAPI_REPLICAS): must be at least 1, or 0 for not known (got %d)", errUsage, *c.replicas)
	}
	leaseSet := getenv("RLAPI_LEASE_REPLICAS") != ""
	fs.Visit(func(f *flag.Flag) { leaseSet = leaseSet || f.Name == "lease-replicas" })
	replicas := *c.replicas
	switch {
	case replicas > 0 && leaseSet && *leases.replicas != replicas:
		return "", 0, fmt.Errorf("%w: --replicas %d (RLAPI_REPLICAS) and --lease-replicas %d (RLAPI_LEASE_REPLICAS) disagree: give --replicas alone",
			errUsage, replicas, *leases.replicas)
	case replicas > 0:
		*leases.replicas = replicas
	case leaseSet:
		replicas = *leases.replicas
	}
	if policy == ratelimit.FailPolicyDegrade && replicas == 0 {
		return "", 0, fmt.Errorf("%w: --fail-policy degrade (RLAPI_FAIL_POLICY) needs --replicas (RLAPI_REPLICAS): how many replicas share the counters, so that each enforces its share of a limit", errUsage)
	}
	return policy, replicas, nil
}

// wireFallback sets the Enforcer's default fail policy and, when the
// replica count is known, its degraded mode over counters (whether the
// default is degrade or only some definitions say so); it returns what
// GET /api/server reports of it, and whether the replica is degraded now
// (nil without a degraded mode). The Fallback's probe stops in OnClose,
// before the counter store closes.
func wireFallback(opts *enforce.Options, counters enforce.CounterStore, policy string, replicas int, timeout time.Duration,
	log *slog.Logger, reg prometheus.Registerer) (wire.FailPolicyInfo, func() bool, error) {
	opts.FailPolicy = policy
	info := wire.FailPolicyInfo{Default: policy, Replicas: replicas}
	if replicas == 0 {
		return info, nil, nil
	}
	f, err := degrade.New(degrade.Options{Counters: counters, Replicas: func() int { return replicas }, Timeout: timeout,
		Logger: log, Registerer: reg})
	if err != nil {
		return info, nil, err
	}
	closeCounters := opts.OnClose
	opts.Fallback, opts.OnClose = f, func() {
		f.Close()
		if closeCounters != nil {
			closeCounters()
		}
	}
	log.Info("degraded mode ready", "fail_policy", policy, "replicas", replicas)
	return info, f.Degraded, nil
}
