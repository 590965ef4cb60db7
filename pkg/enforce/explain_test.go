package enforce_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// explainLimits are definitions of every kind of limit: caller groups,
// caller_target groups, everyone, per ip, per team and shared buckets, a
// shadow definition, two definitions sharing one bucket, a network's
// groups, a target, a server group, tools by name and by glob in every
// tool scope, a route tier in every dimension, an exempt route and a
// descriptor.
func explainLimits() []ratelimit.Definition {
	tb := callerGroup("devs", 120, ptr(40), nil)
	tb.Algorithm = ratelimit.AlgorithmTokenBucket
	shadow := callerGroup("devs", 3600, ptr(500), nil)
	shadow.Mode = ratelimit.ModeShadow
	tier := route("api", 60, "/api/*")
	tier.MaxRequests, tier.IPMaxRequests, tier.UserMaxRequests, tier.AgentMaxRequests, tier.TeamMaxRequests = ptr(1000), ptr(50), ptr(20), ptr(30), ptr(200)
	health := route("health", 60, "/health")
	health.Exempt = true
	tool := func(name, scope string, limit int) ratelimit.Definition {
		return ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: name, WindowSeconds: 60,
			MaxRequests: ptr(limit), ToolScope: scope, Enabled: true}
	}
	desc := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 60,
		MaxRequests: ptr(7), Enabled: true}
	desc.Domain, desc.Descriptor = "edge", []ratelimit.DescriptorEntry{{Key: "tenant"}}
	desc.Name = ratelimit.DescriptorName(desc.Domain, desc.Descriptor)
	return []ratelimit.Definition{
		callerGroup("devs", 60, ptr(100), nil),
		callerGroup("devs", 86400, ptr(5000), nil),
		tb,
		shadow,
		everyone(callerGroup("all", 60, ptr(25), ptr(25)), ""),
		callerTarget("devs", 60, 30),
		callerGroup("agents", 60, nil, ptr(20)),
		withPer(callerGroup("tenants", 60, ptr(4), ptr(4)), ratelimit.PerTeam),
		withPer(callerGroup("pool", 60, ptr(5), nil), ratelimit.PerShared),
		withPer(callerGroup("perip", 60, ptr(9), nil), ratelimit.PerIP),
		callerGroup("lan", 60, ptr(11), nil),
		target("mcp_server", "mcpgw", 60, 500),
		serverGroup("fragile", 60, 100, "mcpgw"),
		tool("mcpgw:search", "", 50),
		tool("mcpgw:*", ratelimit.ToolScopeTool, 60),
		tool("mcpgw:s*", ratelimit.ToolScopePrincipal, 8),
		tool("mcpgw:sea*", ratelimit.ToolScopePrincipalTool, 6),
		tier,
		health,
		desc,
	}
}

// explainCalls are callers of every kind: a user in groups of its own and
// of its team, an agent, anonymous callers inside and outside a network,
// an administrator, calls with routes, an exempt route, a descriptor, and
// a caller without a target.
func explainCalls() map[string]enforce.Call {
	alice := enforce.Call{Username: "alice", Team: "acme", ClientIP: "203.0.113.7", TargetType: "mcp_server", TargetName: "mcpgw"}
	withTool := alice
	withTool.Tool = "search"
	routed := alice
	routed.Method, routed.Path = "GET", "/API/v1/things?x=1"
	pathOnly := enforce.Call{Username: "alice", Method: "POST", Path: "/api/x", ClientIP: "203.0.113.7"}
	return map[string]enforce.Call{
		"user in groups and team":          alice,
		"user on a tool":                   withTool,
		"user on a route and a target":     routed,
		"user on a route only":             pathOnly,
		"exempt route":                     {Username: "alice", Method: "GET", Path: "/health"},
		"agent":                            {ClientID: "bot", TargetType: "mcp_server", TargetName: "mcpgw", Tool: "list"},
		"anonymous in a network":           {ClientIP: "10.1.2.3", TargetType: "mcp_server", TargetName: "mcpgw"},
		"anonymous outside every network":  {ClientIP: "198.51.100.1", TargetType: "mcp_server", TargetName: "mcpgw", Tool: "search"},
		"administrator":                    {Username: "root", TargetType: "mcp_server", TargetName: "mcpgw", Tool: "search"},
		"caller with a descriptor":         {Username: "alice", Descriptors: &enforce.DescriptorRequest{Domain: "edge", Descriptors: []enforce.Descriptor{{Entries: []ratelimit.DescriptorEntry{{Key: "tenant", Value: "t1"}}}}}},
		"unknown caller on another target": {Username: "carol", TargetType: "a2a_agent", TargetName: "/booking"},
	}
}

// gateLine is what a gate of a decision and of a plan must agree on.
func gateLine(g enforce.Gate) string {
	return fmt.Sprintf("%s key=%s limit=%d burst=%d shadow=%v by=%s matched=%s dim=%s", g.DefinitionID, g.Key(), g.Limit, g.Burst, g.Shadow,
		g.MatchedBy, g.Matched, g.Dimension)
}

func gateLines(gates []enforce.Gate) []string {
	out := make([]string, len(gates))
	for i, g := range gates {
		out[i] = gateLine(g)
	}
	slices.Sort(out)
	return out
}

func explainFixture(t *testing.T) *fixture {
	// A generous deadline: the comparison needs decisions the counters
	// made, not the fail policy's answer on a busy machine.
	f := newFixture(t, enforce.Options{BackendTimeout: 10 * time.Second})
	f.Def(explainLimits()...)
	f.Member("user", "alice", "devs")
	f.Member("team", "acme", "tenants", "pool")
	f.Member("client", "bot", "agents")
	f.Member("network", "10.0.0.0/8", "lan", "perip")
	f.Member("user", "root", "devs")
	err := f.Store.InTx(context.Background(), func(q *store.Queries) error {
		_, _, err := q.PutAdmin(context.Background(), ratelimit.Admin{SubjectType: "user", Subject: "root"}, "test")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	return f
}

// A plan lists the gates the decision of the same call takes, for every
// kind of limit and caller: one source of semantics.
func TestExplainAgreesWithCheck(t *testing.T) {
	t.Parallel()
	f := explainFixture(t)
	for name, c := range explainCalls() {
		t.Run(name, func(t *testing.T) {
			p, err := f.E.Explain(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			d := f.Check(c)
			if len(d.Gates) == 0 && name != "exempt route" {
				t.Fatalf("decision took no gate; the table means every call but the exempt route to meet some")
			}
			if got, want := gateLines(p.Gates), gateLines(d.Gates); !slices.Equal(got, want) {
				t.Errorf("plan's gates:\n  %s\ndecision's gates:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			if d.Reason == enforce.ReasonAllowed && len(d.Gates) == 0 && p.Skipped == "" && len(p.Gates) > 0 {
				t.Errorf("decision met no gate, plan has %d", len(p.Gates))
			}
			for _, pd := range p.Definitions {
				if pd.Gate >= 0 && p.Gates[pd.Gate].Key() != pd.Key {
					t.Errorf("definition %s names gate %d, which counts %s, not %s", pd.Definition.ID, pd.Gate, p.Gates[pd.Gate].Key(), pd.Key)
				}
			}
		})
	}
}

// What a plan says of each kind of caller: why each definition applies,
// which one an equal bucket's tighter limit outranks, the groups and
// their memberships, and what a plan without a target lists.
func TestExplainSaysWhy(t *testing.T) {
	t.Parallel()
	f := explainFixture(t)
	calls := explainCalls()
	explain := func(c enforce.Call) enforce.Plan {
		t.Helper()
		p, err := f.E.Explain(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	why := func(p enforce.Plan) []string {
		var out []string
		for _, d := range p.Definitions {
			s := d.Definition.ID
			if d.MatchedBy != "" {
				s += " by " + d.MatchedBy
			}
			if d.Matched != "" {
				s += " matched " + d.Matched + "/" + d.Dimension
			}
			if d.OutrankedBy != "" {
				s += " outranked by " + d.OutrankedBy
			}
			if d.Gate < 0 {
				s += " (no gate)"
			}
			out = append(out, s)
		}
		return out
	}

	p := explain(calls["user in groups and team"])
	got := why(p)
	for _, w := range []string{
		"caller:group:all:60 by everyone",
		"by user:alice outranked by caller:group:all:60",
		"caller:group:pool:60",
		"caller:group:tenants:60",
		"caller_target:group:devs:60 by user:alice",
		"target:mcp_server:mcpgw:60",
		"target:server_group:fragile:60",
	} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, w) }) {
			t.Errorf("plan of alice lacks %q:\n  %s", w, strings.Join(got, "\n  "))
		}
	}
	if want := []enforce.PlanGroup{{Name: "devs", Via: "user:alice"}, {Name: "tenants", Via: "team:acme"}, {Name: "pool", Via: "team:acme"}}; !slices.Equal(p.Groups, want) {
		t.Errorf("groups of alice = %v, want %v", p.Groups, want)
	}
	if p.Admin || p.Stop != nil || p.Skipped != "" || p.AnyTarget {
		t.Errorf("plan of alice: admin %v stop %v skipped %q any target %v", p.Admin, p.Stop, p.Skipped, p.AnyTarget)
	}

	// Any caller of a team: the team's groups and the definitions for
	// everyone apply, on buckets kept per caller.
	p = explain(enforce.Call{Team: "acme"})
	if want := []enforce.PlanGroup{{Name: "tenants", Via: "team:acme"}, {Name: "pool", Via: "team:acme"}}; !slices.Equal(p.Groups, want) || !p.AnyCaller || !p.AnyTarget {
		t.Errorf("plan of team acme: groups %v (want %v), any caller %v, any target %v", p.Groups, want, p.AnyCaller, p.AnyTarget)
	}
	got = why(p)
	for _, w := range []string{"caller:group:tenants:60 by team:acme (no gate)", "caller:group:pool:60 by team:acme (no gate)", "caller:group:all:60 by everyone (no gate)"} {
		if !slices.Contains(got, w) {
			t.Errorf("plan of team acme lacks %q:\n  %s", w, strings.Join(got, "\n  "))
		}
	}

	// The network's groups limit an anonymous caller inside it.
	p = explain(calls["anonymous in a network"])
	if want := []enforce.PlanGroup{{Name: "lan", Via: "network:10.0.0.0/8"}, {Name: "perip", Via: "network:10.0.0.0/8"}}; !slices.Equal(p.Groups, want) {
		t.Errorf("groups of an anonymous caller in 10.0.0.0/8 = %v, want %v", p.Groups, want)
	}

	// An administrator meets no caller limit, only the target's and the
	// tools' shared ones.
	p = explain(calls["administrator"])
	if !p.Admin {
		t.Error("root is an administrator; the plan says not")
	}
	for _, g := range p.Gates {
		if g.MatchedBy != "" || strings.HasPrefix(g.Key(), counterkey.KindCaller.Prefix()) || strings.HasPrefix(g.Key(), counterkey.KindCallerTarget.Prefix()) {
			t.Errorf("administrator's plan has a caller gate: %s", gateLine(g))
		}
	}

	// An exempt route: nothing applies, and the plan names the route.
	p = explain(calls["exempt route"])
	if p.Skipped != enforce.PlanSkippedExemptRoute || len(p.Definitions) != 1 || p.Definitions[0].Definition.ID != "target:route:health:60" {
		t.Errorf("exempt route: skipped %q, definitions %v", p.Skipped, why(p))
	}

	// A caller alone (no target, path or descriptor) is explained on any
	// target: its caller_target definitions are listed without a key.
	p = explain(enforce.Call{Username: "alice"})
	if !p.AnyTarget {
		t.Error("plan of a caller alone is not marked any_target")
	}
	got = why(p)
	if !slices.Contains(got, "caller_target:group:devs:60 by user:alice (no gate)") || !slices.Contains(got, "caller:group:devs:86400 by user:alice") {
		t.Errorf("plan of alice alone:\n  %s", strings.Join(got, "\n  "))
	}
	for _, d := range p.Definitions {
		if d.Definition.Axis == ratelimit.AxisTarget {
			t.Errorf("plan of alice alone lists target definition %s", d.Definition.ID)
		}
	}
}

// A plan reads the rows it names afresh: a membership written a moment
// ago is in it before the change notice reaches the snapshot, and a
// quarantine shows as the stop a decision would meet.
func TestExplainReadsItsRowsFresh(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("devs", 60, ptr(100), nil), target("mcp_server", "mcpgw", 60, 500))
	err := f.Store.InTx(context.Background(), func(q *store.Queries) error {
		_, err := q.PutMembership(context.Background(), ratelimit.Membership{SubjectType: "user", Subject: "dora", Groups: []string{"devs", ratelimit.GroupQuarantineCallers}}, store.Write{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// No refresh: the snapshot does not know dora yet.
	p, err := f.E.Explain(context.Background(), user("dora", "mcpgw"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Groups) != 1 || p.Groups[0].Name != "devs" {
		t.Errorf("groups of dora = %v, want devs", p.Groups)
	}
	if p.Stop == nil || p.Stop.Reason != enforce.ReasonQuarantined || p.Stop.Scope != "caller" || p.Stop.SubjectType != "user" {
		t.Errorf("stop of a quarantined dora = %+v", p.Stop)
	}
	f.Refresh()
	if d := f.Check(user("dora", "mcpgw")); d.Reason != enforce.ReasonQuarantined || d.QuarantineScope != "caller" {
		t.Errorf("decision for dora = %s %s, the plan said quarantined", d.Reason, d.QuarantineScope)
	}
}
