package enforce_test

import (
	"context"
	"github.com/rlctl/rlctl/internal/enforcefixture"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// viewCacheState has a definition for every field a call's gates depend
// on: groups of a user, a team and a network, per-IP and per-team buckets,
// caller_target, a target and its server group, tool globs with kinds,
// and a route tier per method.
func viewCacheState() enforce.State {
	perIP := everyone(callerGroup("per-ip", 60, ptr(30), ptr(30)), ratelimit.PerIP)
	perTeam := withPer(callerGroup("tenants", 60, ptr(40), ptr(40)), ratelimit.PerTeam)
	ctg := callerTarget("pairs", 3600, 50)
	ctg.Everyone = true
	get := route("reads", 60, "/v1/*")
	get.Methods, get.IPMaxRequests, get.UserMaxRequests = []string{"GET"}, ptr(60), ptr(70)
	defs := []ratelimit.Definition{
		callerGroup("staff", 60, ptr(10), ptr(11)), callerGroup("anon", 60, ptr(12), ptr(12)),
		perIP, perTeam, ctg,
		target(ratelimit.EntityMCPServer, "s", 60, 100), serverGroup("fleet", 60, 200, "s", "s2"),
		toolDef("s:*", 3600, 5, ratelimit.ToolScopePrincipal),
		toolDef("s:complete", 3600, 1, "", ratelimit.KindCompletion),
		get,
	}
	st := enforce.State{Definitions: enforcetest.Sentinels()}
	for _, d := range defs {
		st.Definitions = append(st.Definitions, withID(d))
	}
	st.Memberships = []ratelimit.Membership{
		{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"staff"}},
		{SubjectType: ratelimit.SubjectTeam, Subject: "acme", Groups: []string{"tenants"}},
		{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8", Groups: []string{"anon"}},
	}
	st.Admins = []ratelimit.Admin{{SubjectType: ratelimit.SubjectUser, Subject: "root"}}
	return st
}

func viewCacheEnforcer(t *testing.T, st enforce.State, now func() time.Time) (*enforce.Enforcer, *enforcetest.Static) {
	t.Helper()
	src := enforcetest.StaticSource(st)
	e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(), Source: src, Now: now,
		CacheTTL: 72 * time.Hour, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, src
}

// Calls that differ in any one field a gate depends on get their own
// gates from the cache: every call, decided on an Enforcer that has seen
// all of them (twice, so the second is served from the cache), has
// exactly the gates a new Enforcer gives it.
func TestViewCacheMatchesAFreshEnforcer(t *testing.T) {
	t.Parallel()
	clk := enforcefixture.NewClock(time.Date(2026, 3, 2, 0, 0, 30, 0, time.UTC))
	base := enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "s", ClientIP: "192.0.2.1"}
	vary := func(f func(*enforce.Call)) enforce.Call {
		c := base
		f(&c)
		return c
	}
	calls := []enforce.Call{
		base,
		vary(func(c *enforce.Call) { c.Username = "carol" }),
		vary(func(c *enforce.Call) { c.Username, c.ClientID = "", "bot" }),
		vary(func(c *enforce.Call) { c.Username = "" }),
		vary(func(c *enforce.Call) { c.Username, c.ClientIP = "", "10.1.2.3" }),
		vary(func(c *enforce.Call) { c.ClientIP = "192.0.2.2" }),
		vary(func(c *enforce.Call) { c.ClientIP = "" }),
		vary(func(c *enforce.Call) { c.Team = "acme" }),
		vary(func(c *enforce.Call) { c.Team = "other" }),
		vary(func(c *enforce.Call) { c.TargetName = "s2" }),
		vary(func(c *enforce.Call) { c.TargetType, c.TargetName = ratelimit.EntityA2AAgent, "s" }),
		vary(func(c *enforce.Call) { c.Tool = "search" }),
		vary(func(c *enforce.Call) { c.Tool = "complete" }),
		vary(func(c *enforce.Call) { c.Tool, c.Kind = "complete", ratelimit.KindCompletion }),
		vary(func(c *enforce.Call) { c.Method, c.Path = "GET", "/v1/items" }),
		vary(func(c *enforce.Call) { c.Method, c.Path = "POST", "/v1/items" }),
		vary(func(c *enforce.Call) { c.Method, c.Path = "GET", "/v2/items" }),
		// Past maxViewKeyBytes: decided uncached, to the same gates.
		vary(func(c *enforce.Call) { c.Method, c.Path = "GET", "/v1/"+strings.Repeat("x", 2000) }),
		vary(func(c *enforce.Call) { c.IsAdmin = true }),
		vary(func(c *enforce.Call) { c.Username = "root" }),
	}
	warm, _ := viewCacheEnforcer(t, viewCacheState(), clk.Now)
	ctx := context.Background()
	for round := range 2 {
		for _, c := range calls {
			got, err := warm.Peek(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			cold, _ := viewCacheEnforcer(t, viewCacheState(), clk.Now)
			want, err := cold.Peek(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Gates, want.Gates) {
				t.Errorf("round %d, call %+v:\n got %+v\nwant %+v", round+1, c, got.Gates, want.Gates)
			}
		}
	}
	// The calls are not all alike: the test compares different gates.
	first, _ := warm.Peek(ctx, calls[0])
	if admin, _ := warm.Peek(ctx, calls[len(calls)-1]); len(first.Gates) == len(admin.Gates) {
		t.Fatalf("alice has %d gates and an administrator %d: the state does not tell calls apart", len(first.Gates), len(admin.Gates))
	}
}

// A cached call's gates follow the snapshot: a changed limit and a new
// membership apply to the next call, and a gate's reset is the end of the
// window the call is in, not the first call's.
func TestViewCacheFollowsChangesAndTime(t *testing.T) {
	t.Parallel()
	clk := enforcefixture.NewClock(time.Date(2026, 3, 2, 0, 0, 30, 0, time.UTC))
	st := viewCacheState()
	e, src := viewCacheEnforcer(t, st, clk.Now)
	ctx := context.Background()
	call := enforce.Call{Username: "carol", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	limitOf := func(d enforce.Decision, id string) (int64, time.Time) {
		t.Helper()
		for _, g := range d.Gates {
			if g.DefinitionID == id {
				return g.Limit, g.Reset
			}
		}
		return 0, time.Time{}
	}
	check := func() enforce.Decision {
		t.Helper()
		d, err := e.Check(ctx, call)
		if err != nil || !d.Allowed {
			t.Fatalf("check: %+v, %v", d, err)
		}
		return d
	}
	check()
	d := check()
	if l, reset := limitOf(d, "target:mcp_server:s:60"); l != 100 || !reset.Equal(time.Date(2026, 3, 2, 0, 1, 0, 0, time.UTC)) {
		t.Fatalf("target gate: limit %d reset %v, want 100 at 00:01:00", l, reset)
	}
	if l, _ := limitOf(d, "caller:group:staff:60"); l != 0 {
		t.Fatalf("carol is in no group yet, but has a staff gate of %d", l)
	}

	clk.Advance(time.Minute)
	if _, reset := limitOf(check(), "target:mcp_server:s:60"); !reset.Equal(time.Date(2026, 3, 2, 0, 2, 0, 0, time.UTC)) {
		t.Errorf("a minute later: reset %v, want 00:02:00", reset)
	}

	for i, def := range st.Definitions {
		if def.ID == "target:mcp_server:s:60" {
			st.Definitions[i].MaxRequests = ptr(7)
		}
	}
	st.Memberships = append(st.Memberships, ratelimit.Membership{SubjectType: ratelimit.SubjectUser, Subject: "carol", Groups: []string{"staff"}})
	src.Set(st)
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	d = check()
	if l, _ := limitOf(d, "target:mcp_server:s:60"); l != 7 {
		t.Errorf("after the change: target limit %d, want 7", l)
	}
	if l, _ := limitOf(d, "caller:group:staff:60"); l != 10 {
		t.Errorf("after carol joined staff: staff limit %d, want 10", l)
	}
}

// A quarantine reaches a caller whose view is cached, and its expiry
// ends it on the cached view, at the time it names.
func TestViewCacheQuarantineAndExpiry(t *testing.T) {
	t.Parallel()
	clk := enforcefixture.NewClock(time.Date(2026, 3, 2, 0, 0, 30, 0, time.UTC))
	st := viewCacheState()
	e, src := viewCacheEnforcer(t, st, clk.Now)
	ctx := context.Background()
	call := enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	reason := func() string {
		t.Helper()
		d, err := e.Check(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		return d.Reason
	}
	for range 2 {
		if r := reason(); r != enforce.ReasonAllowed {
			t.Fatalf("before the quarantine: %s", r)
		}
	}
	until := clk.Now().Add(time.Minute)
	for i, m := range st.Memberships {
		if m.SubjectType == ratelimit.SubjectUser && m.Subject == "alice" {
			st.Memberships[i].Groups = append(st.Memberships[i].Groups, ratelimit.GroupQuarantineCallers)
			st.Memberships[i].QuarantineExpiresAt = &until
		}
	}
	src.Set(st)
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := reason(); r != enforce.ReasonQuarantined {
			t.Fatalf("quarantined: %s, want %s", r, enforce.ReasonQuarantined)
		}
	}
	clk.Advance(time.Minute)
	if r := reason(); r != enforce.ReasonAllowed {
		t.Errorf("after the quarantine expired: %s, want %s", r, enforce.ReasonAllowed)
	}
}
