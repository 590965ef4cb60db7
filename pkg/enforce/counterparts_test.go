package enforce_test

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestPartsOfEveryKind: the parts a store indexes are the key's caller,
// target (OnTarget) and definition, for every kind a selector picks, and
// none for the failed-credential and escalation kinds.
func TestPartsOfEveryKind(t *testing.T) {
	def := func(axis, entity, name string) ratelimit.Definition {
		return ratelimit.Definition{ID: ratelimit.DefinitionID(axis, entity, name, 60), WindowSeconds: 60, Algorithm: ratelimit.AlgorithmTokenBucket}
	}
	group := def(ratelimit.AxisCaller, ratelimit.EntityGroup, "developers")
	pairs := def(ratelimit.AxisCallerTarget, ratelimit.EntityGroup, "developers")
	server := def(ratelimit.AxisTarget, ratelimit.EntityMCPServer, "mcp|gw:x")
	sg := def(ratelimit.AxisTarget, ratelimit.EntityServerGroup, "fragile")
	for _, tt := range []struct {
		key  enforce.CounterKey
		want enforce.CounterParts
	}{
		{enforce.CallerCounter(60, "user:alice"), enforce.CounterParts{Caller: "user:alice"}},
		{enforce.CallerTargetCounter(60, "user:a|x", "mcp_server:mcpgw"), enforce.CounterParts{Caller: "user:a|x", Target: "mcp_server:mcpgw"}},
		{enforce.CallerTargetCounter(60, "team:acme", "route:high"), enforce.CounterParts{Caller: "team:acme", Target: "route:high"}},
		{enforce.ShadowCounter(group, "agent:bot", ""), enforce.CounterParts{Caller: "agent:bot", Definition: group.ID}},
		{enforce.ShadowCounter(pairs, "ip:2001:db8::/64", "a2a_agent:/b"), enforce.CounterParts{Caller: "ip:2001:db8::/64", Target: "a2a_agent:/b", Definition: pairs.ID}},
		{enforce.PerCounter(group, "team:acme", ""), enforce.CounterParts{Caller: "team:acme", Definition: group.ID}},
		{enforce.PerCounter(group, "", ""), enforce.CounterParts{Definition: group.ID}},
		{enforce.PerCounter(pairs, "ip:203.0.113.7", "mcp_server:m"), enforce.CounterParts{Caller: "ip:203.0.113.7", Target: "mcp_server:m", Definition: pairs.ID}},
		{enforce.TargetCounter(server, ""), enforce.CounterParts{Target: "mcp_server:mcp|gw:x", Definition: server.ID}},
		{enforce.TargetCounter(sg, "mcpgw"), enforce.CounterParts{Target: "mcp_server:mcpgw", Definition: sg.ID}},
		{enforce.DescriptorCounter(enforce.AlgorithmSlidingWindow, "api", []ratelimit.DescriptorEntry{{Key: "path", Value: "/a"}}, nil, 60),
			enforce.CounterParts{Target: "descriptor:api/path=%2Fa", Definition: "target:descriptor:api/path=%2Fa:60"}},
		{enforce.AuthFailuresCounter("rlapi", 300, "203.0.113.7"), enforce.CounterParts{}},
		{enforce.AuthLockoutCounter("gateway", "2001:db8::/64"), enforce.CounterParts{}},
		{enforce.ViolationCounter(3600, "user:alice"), enforce.CounterParts{}},
	} {
		s := tt.key.String()
		if got := enforce.PartsOf(s); got != tt.want {
			t.Errorf("parts of %q: %+v, want %+v", s, got, tt.want)
		}
		if k, err := enforce.ParseCounterKey(s); err == nil && tt.want.Target != "" && k.OnTarget() != tt.want.Target {
			t.Errorf("key %q: OnTarget %q, the parts' target %q", s, k.OnTarget(), tt.want.Target)
		}
	}
	for _, s := range []string{"", "c|60|", "x|60|user:a", "t|caller:group:g:60"} {
		if got := enforce.PartsOf(s); got != (enforce.CounterParts{}) {
			t.Errorf("parts of %q, no counter key: %+v, want none", s, got)
		}
	}
}

// TestPartsOfDescriptorKeyAllocatesNothing: a descriptor's gates are built
// per call, so their parts must cost no allocation.
func TestPartsOfDescriptorKeyAllocatesNothing(t *testing.T) {
	key := enforce.DescriptorCounter("", "api", []ratelimit.DescriptorEntry{{Key: "path", Value: "/a"}}, nil, 60).String()
	var p enforce.CounterParts
	if n := testing.AllocsPerRun(100, func() { p = enforce.PartsOf(key) }); n != 0 {
		t.Errorf("PartsOf(%q) allocates %v times per call, want 0", key, n)
	}
	if p.Definition == "" {
		t.Errorf("no definition in %q", key)
	}
}
