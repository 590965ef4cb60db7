package plan_test

import (
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// def is an enabled caller definition of a 60 s window selecting name
// (a group, or the subject of a user, client or team definition).
func def(entity, name string, limit int, override, everyone bool) ratelimit.Definition {
	d := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: entity, Name: name, WindowSeconds: 60,
		UserMaxRequests: &limit, AgentMaxRequests: &limit, Enabled: true, Override: override, Everyone: everyone}
	d.ID = d.Key()
	return d
}

func group(name string, limit int, override bool) ratelimit.Definition {
	return def(ratelimit.EntityGroup, name, limit, override, false)
}

// TestPrecedenceByLevel: within one bucket the most specific override
// wins, raising or lowering the limit, the most restrictive of its level;
// without overrides the most restrictive definition wins as it always
// has. Alice is in premium and gold through her user membership, in
// teamgrp through her team acme; an anonymous caller's network
// 10.0.0.0/8 is in netgrp.
func TestPrecedenceByLevel(t *testing.T) {
	t.Parallel()
	everyone := def(ratelimit.EntityGroup, "all", 25, false, true)
	members := plan.NewMembers()
	members.Put("user:alice", plan.Member{Groups: []string{"premium", "gold"}})
	members.Put("client:bot", plan.Member{Groups: []string{"premium"}})
	members.Put("team:acme", plan.Member{Groups: []string{"teamgrp"}})
	network := &plan.Member{Groups: []string{"netgrp"}}
	alice := plan.Caller{Caller: "user:alice", UserKey: "user:alice", TeamKey: "team:acme", Team: "team:acme"}
	bot := plan.Caller{Caller: "agent:bot", Agent: true, ClientKey: "client:bot"}
	anonymous := plan.Caller{Caller: "ip:10.1.2.3", IP: "ip:10.1.2.3", NetworkKey: "network:10.0.0.0/8"}
	anonymousOfTeam := anonymous
	anonymousOfTeam.TeamKey, anonymousOfTeam.Team = "team:acme", "team:acme"

	for _, c := range []struct {
		name          string
		defs          []ratelimit.Definition
		who           plan.Caller
		want          int64
		wantDef       string
		wantOverrides []string
		wantLosers    map[string]bool // loser id -> overridden
	}{
		{"no override: the most restrictive", []ratelimit.Definition{group("premium", 100, false), everyone}, alice,
			25, everyone.ID, nil, map[string]bool{"caller:group:premium:60": false}},
		{"group over everyone, raising", []ratelimit.Definition{group("premium", 100, true), everyone}, alice,
			100, "caller:group:premium:60", []string{everyone.ID}, map[string]bool{everyone.ID: true}},
		{"team over everyone", []ratelimit.Definition{group("teamgrp", 50, true), everyone}, alice,
			50, "caller:group:teamgrp:60", []string{everyone.ID}, map[string]bool{everyone.ID: true}},
		{"group over team, raising", []ratelimit.Definition{group("premium", 100, true), group("teamgrp", 10, true)}, alice,
			100, "caller:group:premium:60", []string{"caller:group:teamgrp:60"}, map[string]bool{"caller:group:teamgrp:60": true}},
		{"subject over group, lowering", []ratelimit.Definition{def(ratelimit.EntityUser, "alice", 5, false, false), group("premium", 100, true), everyone}, alice,
			5, "caller:user:alice:60", []string{everyone.ID, "caller:group:premium:60"},
			map[string]bool{everyone.ID: true, "caller:group:premium:60": true}},
		{"subject over non-overrides, raising", []ratelimit.Definition{def(ratelimit.EntityUser, "alice", 500, false, false), group("premium", 100, false), everyone}, alice,
			500, "caller:user:alice:60", []string{"caller:group:premium:60", everyone.ID},
			map[string]bool{everyone.ID: true, "caller:group:premium:60": true}},
		{"client subject over its group", []ratelimit.Definition{def(ratelimit.EntityClient, "bot", 7, false, false), group("premium", 100, true)}, bot,
			7, "caller:client:bot:60", []string{"caller:group:premium:60"}, map[string]bool{"caller:group:premium:60": true}},
		{"team subject at the team level, below the group", []ratelimit.Definition{def(ratelimit.EntityTeam, "acme", 30, false, false), group("premium", 100, true)}, alice,
			100, "caller:group:premium:60", []string{"caller:team:acme:60"}, map[string]bool{"caller:team:acme:60": true}},
		{"team subject over everyone", []ratelimit.Definition{def(ratelimit.EntityTeam, "acme", 30, false, false), everyone}, alice,
			30, "caller:team:acme:60", []string{everyone.ID}, map[string]bool{everyone.ID: true}},
		{"network over everyone", []ratelimit.Definition{group("netgrp", 60, true), everyone}, anonymous,
			60, "caller:group:netgrp:60", []string{everyone.ID}, map[string]bool{everyone.ID: true}},
		{"team over network", []ratelimit.Definition{group("teamgrp", 40, true), group("netgrp", 60, true)}, anonymousOfTeam,
			40, "caller:group:teamgrp:60", []string{"caller:group:netgrp:60"}, map[string]bool{"caller:group:netgrp:60": true}},
		{"one level: the most restrictive override", []ratelimit.Definition{group("premium", 100, true), group("gold", 80, true), everyone}, alice,
			80, "caller:group:gold:60", []string{everyone.ID},
			map[string]bool{everyone.ID: true, "caller:group:premium:60": false}},
		{"an override over a more specific non-override", []ratelimit.Definition{group("premium", 10, false), group("teamgrp", 50, true)}, alice,
			50, "caller:group:teamgrp:60", []string{"caller:group:premium:60"}, map[string]bool{"caller:group:premium:60": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			defs := map[string]ratelimit.Definition{}
			for _, d := range c.defs {
				defs[d.ID] = d
			}
			idx := plan.NewIndex(defs)
			var net *plan.Member
			if c.who.NetworkKey != "" {
				net = network
			}
			log := &plan.Log{}
			gates := plan.Gates(&idx, members, plan.Target{Type: ratelimit.EntityMCPServer, Name: "s"}, c.who, net, false, time.Unix(0, 0), log)
			if len(gates) != 1 {
				t.Fatalf("gates = %+v; want one, the bucket every definition shares", gates)
			}
			g := gates[0]
			if g.Limit != c.want || g.DefinitionID != c.wantDef {
				t.Errorf("gate %s at %d; want %s at %d", g.DefinitionID, g.Limit, c.wantDef, c.want)
			}
			if !slices.Equal(slices.Sorted(slices.Values(g.Overrides)), slices.Sorted(slices.Values(c.wantOverrides))) {
				t.Errorf("overrides = %v; want %v", g.Overrides, c.wantOverrides)
			}
			losers := map[string]bool{}
			for i, l := range log.Losers {
				losers[l.DefinitionID] = log.Overridden[i]
			}
			if len(losers) != len(c.wantLosers) {
				t.Errorf("losers (id: overridden) = %v; want %v", losers, c.wantLosers)
			}
			for id, overridden := range c.wantLosers {
				if got, ok := losers[id]; !ok || got != overridden {
					t.Errorf("loser %s: overridden %v (listed %v); want overridden %v", id, got, ok, overridden)
				}
			}
		})
	}
}

// TestShadowOverrideCountsApart: a shadow definition naming a subject
// counts on its own bucket and takes nothing from the shared one.
func TestShadowOverrideCountsApart(t *testing.T) {
	t.Parallel()
	shadow := def(ratelimit.EntityUser, "alice", 5, false, false)
	shadow.Mode = ratelimit.ModeShadow
	premium := group("premium", 100, true)
	idx := plan.NewIndex(map[string]ratelimit.Definition{shadow.ID: shadow, premium.ID: premium})
	members := plan.NewMembers()
	members.Put("user:alice", plan.Member{Groups: []string{"premium"}})
	gates := plan.Gates(&idx, members, plan.Target{Type: ratelimit.EntityMCPServer, Name: "s"},
		plan.Caller{Caller: "user:alice", UserKey: "user:alice"}, nil, false, time.Unix(0, 0), nil)
	if len(gates) != 2 {
		t.Fatalf("gates = %+v; want the shared bucket and the shadow's own", gates)
	}
	for _, g := range gates {
		if len(g.Overrides) > 0 {
			t.Errorf("gate %s overrides %v; want none", g.DefinitionID, g.Overrides)
		}
	}
}
