package counterkey_test

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
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
		key  counterkey.Key
		want counterkey.Parts
	}{
		{counterkey.Caller(60, "user:alice"), counterkey.Parts{Caller: "user:alice"}},
		{counterkey.CallerTarget(60, "user:a|x", "mcp_server:mcpgw"), counterkey.Parts{Caller: "user:a|x", Target: "mcp_server:mcpgw"}},
		{counterkey.CallerTarget(60, "team:acme", "route:high"), counterkey.Parts{Caller: "team:acme", Target: "route:high"}},
		{counterkey.Shadow(group, "agent:bot", ""), counterkey.Parts{Caller: "agent:bot", Definition: group.ID}},
		{counterkey.Shadow(pairs, "ip:2001:db8::/64", "a2a_agent:/b"), counterkey.Parts{Caller: "ip:2001:db8::/64", Target: "a2a_agent:/b", Definition: pairs.ID}},
		{counterkey.Per(group, "team:acme", ""), counterkey.Parts{Caller: "team:acme", Definition: group.ID}},
		{counterkey.Per(group, "", ""), counterkey.Parts{Definition: group.ID}},
		{counterkey.Per(pairs, "ip:203.0.113.7", "mcp_server:m"), counterkey.Parts{Caller: "ip:203.0.113.7", Target: "mcp_server:m", Definition: pairs.ID}},
		{counterkey.Target(server, ""), counterkey.Parts{Target: "mcp_server:mcp|gw:x", Definition: server.ID}},
		{counterkey.Target(sg, "mcpgw"), counterkey.Parts{Target: "mcp_server:mcpgw", Definition: sg.ID}},
		{counterkey.Descriptor(algorithm.SlidingWindow, "api", []ratelimit.DescriptorEntry{{Key: "path", Value: "/a"}}, nil, 60),
			counterkey.Parts{Target: "descriptor:api/path=%2Fa", Definition: "target:descriptor:api/path=%2Fa:60"}},
		{counterkey.AuthFailures("rlapi", 300, "203.0.113.7"), counterkey.Parts{}},
		{counterkey.AuthLockout("gateway", "2001:db8::/64"), counterkey.Parts{}},
		{counterkey.Violation(3600, "user:alice"), counterkey.Parts{}},
	} {
		s := tt.key.String()
		if got := counterkey.PartsOf(s); got != tt.want {
			t.Errorf("parts of %q: %+v, want %+v", s, got, tt.want)
		}
		if k, err := counterkey.Parse(s); err == nil && tt.want.Target != "" && k.OnTarget() != tt.want.Target {
			t.Errorf("key %q: OnTarget %q, the parts' target %q", s, k.OnTarget(), tt.want.Target)
		}
	}
	for _, s := range []string{"", "c|60|", "x|60|user:a", "t|caller:group:g:60"} {
		if got := counterkey.PartsOf(s); got != (counterkey.Parts{}) {
			t.Errorf("parts of %q, no counter key: %+v, want none", s, got)
		}
	}
}

// TestPartsOfDescriptorKeyAllocatesNothing: a descriptor's gates are built
// per call, so their parts must cost no allocation.
func TestPartsOfDescriptorKeyAllocatesNothing(t *testing.T) {
	key := counterkey.Descriptor("", "api", []ratelimit.DescriptorEntry{{Key: "path", Value: "/a"}}, nil, 60).String()
	var p counterkey.Parts
	if n := testing.AllocsPerRun(100, func() { p = counterkey.PartsOf(key) }); n != 0 {
		t.Errorf("PartsOf(%q) allocates %v times per call, want 0", key, n)
	}
	if p.Definition == "" {
		t.Errorf("no definition in %q", key)
	}
}
