package enforce_test

import (
	"context"
	"slices"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func everyone(d ratelimit.Definition, per string) ratelimit.Definition {
	d.Everyone, d.Per = true, per
	return d
}

func withPer(d ratelimit.Definition, per string) ratelimit.Definition {
	d.Per = per
	return d
}

func inTeam(c enforce.Call, team string) enforce.Call {
	c.Team = team
	return c
}

// deniedBy names the definitions whose gates denied d.
func deniedBy(d enforce.Decision) []string {
	var ids []string
	for _, g := range d.Denied {
		ids = append(ids, g.DefinitionID)
	}
	return ids
}

func wantDecision(t *testing.T, what string, d enforce.Decision, allowed bool, denied ...string) {
	t.Helper()
	got := deniedBy(d)
	if d.Allowed != allowed || len(got) != len(denied) {
		t.Errorf("%s: allowed %v denied by %v, want allowed %v denied by %v", what, d.Allowed, got, allowed, denied)
		return
	}
	for i := range got {
		if got[i] != denied[i] {
			t.Errorf("%s: denied by %v, want %v", what, got, denied)
		}
	}
}

// Definitions for everyone select every caller without membership: one
// per IP counts every call from an address (an IPv6 /64 as one), whoever
// makes it; one per caller gives every user (and every anonymous caller,
// keyed by its address) a bucket of its own. An anonymous call without an
// address has no one to limit.
func TestEveryoneLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	perIP := everyone(callerGroup("per-ip", 60, ptr(3), ptr(3)), ratelimit.PerIP)
	everyUser := everyone(callerGroup("every-user", 60, ptr(5), nil), "")
	f.Def(perIP, everyUser)

	for i := range 3 {
		wantDecision(t, "alice's call from 192.0.2.1", f.Check(from(user("alice", "srv"), "192.0.2.1")), true)
		_ = i
	}
	wantDecision(t, "alice's 4th call from 192.0.2.1", f.Check(from(user("alice", "srv"), "192.0.2.1")), false, perIP.Key())
	wantDecision(t, "bob from the same address", f.Check(from(user("bob", "srv"), "192.0.2.1")), false, perIP.Key())
	wantDecision(t, "an agent from the same address", f.Check(from(agent("bot", "srv"), "192.0.2.1")), false, perIP.Key())
	wantDecision(t, "an anonymous call from the same address", f.Check(anonymous("192.0.2.1")), false, perIP.Key())
	wantDecision(t, "bob from another address", f.Check(from(user("bob", "srv"), "192.0.2.2")), true)
	// alice without an address: only her own bucket (3 of 5 used).
	if got := f.Burst(user("alice", "srv"), 3); got != 2 {
		t.Errorf("alice without an address: %d of 3 allowed, want 2 (her bucket of 5 held 3)", got)
	}
	wantDecision(t, "alice past her own limit", f.Check(user("alice", "srv")), false, everyUser.Key())

	// Two addresses of one /64 share the per-IP bucket; the next /64 does not.
	if got := f.Burst(anonymous("2001:db8:1:2::1"), 2) + f.Burst(anonymous("2001:db8:1:2:ffff::9"), 2); got != 3 {
		t.Errorf("4 anonymous calls from one /64: %d allowed, want 3", got)
	}
	wantDecision(t, "the next /64", f.Check(anonymous("2001:db8:1:3::1")), true)
	// Anonymous callers are users with a bucket per address.
	wantDecision(t, "anonymous without an address", f.Check(enforce.Call{TargetType: "mcp_server", TargetName: "srv"}), true)
	if d := f.Check(enforce.Call{TargetType: "mcp_server", TargetName: "srv"}); len(d.Gates) != 0 {
		t.Errorf("anonymous call without an address was gated: %+v", d.Gates)
	}
	if n := f.counter(perKey(perIP, "ip:2001:db8:1:2::/64")); n != 3 {
		t.Errorf("per-IP bucket of the /64 counts %d, want 3", n)
	}
	if n := f.counter(counterkey.Caller(60, "ip:2001:db8:1:2::/64").String()); n != 3 {
		t.Errorf("the anonymous /64's own bucket counts %d, want 3", n)
	}
	// Administrators bypass caller definitions, for everyone too.
	wantDecision(t, "an administrator from the spent address", f.Check(from(enforce.Call{Username: "root", IsAdmin: true, TargetType: "mcp_server", TargetName: "srv"}, "192.0.2.1")), true)
}

// A team is a subject: its groups limit every call that names it, per
// team one bucket for the whole team, and its quarantine denies. A shared
// definition is one bucket for every caller it selects.
func TestTeamsAndSharedBuckets(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	perTeam := withPer(callerGroup("tenants", 60, ptr(4), ptr(4)), ratelimit.PerTeam)
	pool := withPer(callerGroup("pool", 60, ptr(5), nil), ratelimit.PerShared)
	global := everyone(callerGroup("global", 3600, ptr(100), ptr(100)), ratelimit.PerShared)
	f.Def(perTeam, pool, global)
	f.Member(ratelimit.SubjectTeam, "acme", "tenants")
	f.Member(ratelimit.SubjectTeam, "evil", ratelimit.GroupQuarantineCallers)
	f.Member(ratelimit.SubjectUser, "alice", "pool")
	f.Member(ratelimit.SubjectUser, "bob", "pool")

	// acme's members share the team's 4, whoever they are.
	if got := f.Burst(inTeam(user("carol", "srv"), "acme"), 2) + f.Burst(inTeam(agent("bot", "srv"), "acme"), 3); got != 4 {
		t.Errorf("5 calls of team acme: %d allowed, want 4", got)
	}
	wantDecision(t, "acme's 6th call", f.Check(inTeam(user("dave", "srv"), "acme")), false, perTeam.Key())
	wantDecision(t, "carol without her team", f.Check(user("carol", "srv")), true)
	wantDecision(t, "a team without a membership", f.Check(inTeam(user("carol", "srv"), "globex")), true)
	if d := f.Check(inTeam(user("carol", "srv"), "evil")); d.Reason != enforce.ReasonQuarantined || d.QuarantineScope != "caller" {
		t.Errorf("a call of a quarantined team: %+v, want quarantined", d)
	}

	// alice and bob draw from one pool of 5.
	if got := f.Burst(user("alice", "srv"), 3) + f.Burst(user("bob", "srv"), 3); got != 5 {
		t.Errorf("6 calls of the pool: %d allowed, want 5", got)
	}
	wantDecision(t, "alice past the pool", f.Check(user("alice", "srv")), false, pool.Key())
	if n := f.counter(perKey(pool, "")); n != 5 {
		t.Errorf("the shared bucket counts %d, want 5", n)
	}
	// The global bucket counted every allowed call: 4 + 1 (carol) + 1 (globex) + 5.
	if n := f.counter(perKey(global, "")); n != 11 {
		t.Errorf("the global bucket counts %d, want 11", n)
	}
}

// Every caller gate says why its definition applied: the membership that
// put the caller in its group (a user's, a client's, a team's, or for an
// anonymous caller its network's), or everyone. A group two memberships
// name is the first one's: user, then client, then team.
func TestGatesSayWhyTheyMatched(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(callerGroup("devs", 3600, ptr(100), ptr(100)),
		withPer(callerGroup("tenants", 3600, ptr(100), ptr(100)), ratelimit.PerTeam),
		callerGroup("anon-net", 60, ptr(100), nil),
		everyone(callerGroup("per-ip", 86400, ptr(1000), ptr(1000)), ratelimit.PerIP),
		target("mcp_server", "srv", 60, 1000))
	f.Member(ratelimit.SubjectUser, "alice", "devs")
	f.Member(ratelimit.SubjectClient, "bot", "devs")
	f.Member(ratelimit.SubjectTeam, "acme", "tenants", "devs")
	f.Member(ratelimit.SubjectNetwork, "192.0.2.0/24", "anon-net")
	matchedBy := func(d enforce.Decision) map[string]string {
		out := map[string]string{}
		for _, g := range d.Gates {
			out[g.DefinitionID] = g.MatchedBy
		}
		return out
	}
	for _, c := range []struct {
		name string
		call enforce.Call
		want map[string]string
	}{
		{"alice of acme from an address", from(inTeam(user("alice", "srv"), "acme"), "198.51.100.1"), map[string]string{
			"caller:group:devs:3600": "user:alice", "caller:group:tenants:3600": "team:acme",
			"caller:group:per-ip:86400": "everyone", "target:mcp_server:srv:60": ""}},
		{"an agent of acme", inTeam(agent("bot", "srv"), "acme"), map[string]string{
			"caller:group:devs:3600": "client:bot", "caller:group:tenants:3600": "team:acme", "target:mcp_server:srv:60": ""}},
		{"carol of acme", inTeam(user("carol", "srv"), "acme"), map[string]string{
			"caller:group:devs:3600": "team:acme", "caller:group:tenants:3600": "team:acme", "target:mcp_server:srv:60": ""}},
		{"anonymous in the network", anonymous("192.0.2.7"), map[string]string{
			"caller:group:anon-net:60": "network:192.0.2.0/24", "caller:group:per-ip:86400": "everyone", "target:mcp_server:srv:60": ""}},
	} {
		got := matchedBy(f.Check(c.call))
		if len(got) != len(c.want) {
			t.Errorf("%s: gates %v, want %v", c.name, got, c.want)
			continue
		}
		for id, via := range c.want {
			if have, ok := got[id]; !ok || have != via {
				t.Errorf("%s: gate %s matched by %q (present %v), want %q", c.name, id, have, ok, via)
			}
		}
	}
}

// BenchmarkCheckDimensions: one decision (Check on the in-memory counter
// store) of a user of a team from an address, by the caller definitions
// that apply: one group definition through membership (the baseline),
// three definitions of other dimensions (for everyone per IP, per team
// through the team's membership, shared through the user's), and 100
// definitions for everyone per IP of different windows (each a gate: what
// a decision with many definitions for everyone costs).
func BenchmarkCheckDimensions(b *testing.B) {
	const high = 1_000_000_000
	base := []ratelimit.Definition{callerGroup("member", 60, ptr(high), ptr(high))}
	dims := append(slices.Clone(base),
		everyone(callerGroup("per-ip", 60, ptr(high), ptr(high)), ratelimit.PerIP),
		withPer(callerGroup("tenants", 60, ptr(high), ptr(high)), ratelimit.PerTeam),
		withPer(callerGroup("pool", 60, ptr(high), ptr(high)), ratelimit.PerShared))
	many := slices.Clone(base)
	for w := range 100 {
		many = append(many, everyone(callerGroup("per-ip", 61+w, ptr(high), ptr(high)), ratelimit.PerIP))
	}
	call := from(inTeam(user("alice", "srv"), "acme"), "198.51.100.7")
	for _, c := range []struct {
		name  string
		defs  []ratelimit.Definition
		gates int
	}{{"membership", base, 1}, {"ip+team+shared", dims, 4}, {"everyone-per-ip=100", many, 101}} {
		st := enforce.State{Definitions: enforcetest.Sentinels(), Memberships: []ratelimit.Membership{
			{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"member", "pool"}},
			{SubjectType: ratelimit.SubjectTeam, Subject: "acme", Groups: []string{"tenants"}}}}
		for _, d := range c.defs {
			st.Definitions = append(st.Definitions, withID(d))
		}
		e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(), Source: enforcetest.StaticSource(st), SweepInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _ := e.Check(context.Background(), call); !d.Allowed || len(d.Gates) != c.gates {
					b.Fatalf("decision %+v", d)
				}
			}
		})
		e.Close()
	}
}

// perKey is the key of d's bucket of subject (ip:<key>, team:<name>, or
// empty for a shared bucket), d named by its id as the snapshot names it.
func perKey(d ratelimit.Definition, subject string) string {
	d.ID = d.Key()
	return counterkey.Per(d, subject, "").String()
}
