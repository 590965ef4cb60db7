package enforce

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Fail policies: what a call gets when the counter store cannot decide
// it. Each gate has its definition's policy or, naming none, the
// enforcer's default; a call's policy is the strictest among its enforce
// gates (closed, then degrade, then open): a shadow gate never refuses,
// so it has no say.

// defaultFailPolicy is opts's default fail policy (never ""), or why it
// cannot be one.
func defaultFailPolicy(opts Options) (string, error) {
	p := opts.FailPolicy
	switch {
	case p == "" && opts.FailClosed:
		p = ratelimit.FailPolicyClosed
	case p == "":
		p = ratelimit.FailPolicyOpen
	case !slices.Contains(ratelimit.FailPolicies(), p):
		return "", fmt.Errorf("enforce: Options.FailPolicy %q: must be one of %q", p, ratelimit.FailPolicies())
	case opts.FailClosed && p != ratelimit.FailPolicyClosed:
		return "", fmt.Errorf("enforce: Options.FailClosed and Options.FailPolicy %q disagree: set one", p)
	}
	if p == ratelimit.FailPolicyDegrade && opts.Fallback == nil {
		return "", fmt.Errorf("enforce: Options.FailPolicy %q needs Options.Fallback (pkg/enforce/degrade), which decides while the counter store is down", p)
	}
	return p, nil
}

// failPolicies are an Enforcer's fail policies: the default (never "")
// and the Fallback that decides gates of policy degrade while the counter
// store is down (nil: none).
type failPolicies struct {
	def      string
	fallback Fallback
}

// ofGate is g's fail policy: its definition's, else the default; degrade
// without a Fallback is open.
func (p failPolicies) ofGate(g Gate) string {
	policy := g.FailPolicy()
	if policy == "" {
		policy = p.def
	}
	if policy == ratelimit.FailPolicyDegrade && p.fallback == nil {
		return ratelimit.FailPolicyOpen
	}
	return policy
}

// ofCall is the policy of a call over gates.
func (p failPolicies) ofCall(gates []Gate) string {
	policy := ratelimit.FailPolicyOpen
	for _, g := range gates {
		if g.Shadow {
			continue
		}
		switch p.ofGate(g) {
		case ratelimit.FailPolicyClosed:
			return ratelimit.FailPolicyClosed
		case ratelimit.FailPolicyDegrade:
			policy = ratelimit.FailPolicyDegrade
		}
	}
	return policy
}

// decideLocally decides a call whose policy is degrade on the Fallback's
// local counters: the gates of policy degrade count there, on their share
// of the limit (their Limit and Burst become it); the others (open, and
// shadow gates) pass uncounted, as they do when the call fails open. The
// answer is one for all of gates, as a store's.
func (p failPolicies) decideLocally(gates []Gate, cost int64, consume bool, now time.Time) TakeResult {
	var idx []int
	req := TakeRequest{Cost: cost, Consume: consume, Now: now}
	for i, g := range gates {
		if !g.Shadow && p.ofGate(g) == ratelimit.FailPolicyDegrade {
			idx = append(idx, i)
			req.Gates = append(req.Gates, counterGateOf(g))
		}
	}
	local := p.fallback.Take(req)
	res := TakeResult{Allowed: local.Allowed, Room: make([]bool, len(gates)), States: make([]GateState, len(gates))}
	for i := range res.Room {
		res.Room[i] = true
	}
	for j, i := range idx {
		gates[i].Limit, gates[i].Burst = req.Gates[j].Limit, req.Gates[j].Burst
		res.Room[i], res.States[i] = local.Room[j], local.States[j]
	}
	return res
}

// report writes what the Fallback admitted while the store was down
// before a decision asks the store again; nil when there is nothing to
// report (or no Fallback).
func (p failPolicies) report(ctx context.Context) error {
	if p.fallback == nil || !p.fallback.Pending() {
		return nil
	}
	return p.fallback.Report(ctx)
}
