package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// deniedIDs names the gates of a /api/check answer that had no room.
func deniedIDs(r checkResult) []string {
	var ids []string
	for _, g := range r.Gates {
		if rem, _ := g["remaining"].(float64); rem == 0 && !r.Allowed {
			ids = append(ids, fmt.Sprint(g["definition_id"]))
		}
	}
	return ids
}

func checkTeam(t *testing.T, hc *http.Client, env *apitest.Env, gw, user, team, ip string) checkResult {
	t.Helper()
	body := fmt.Sprintf(`{"username":%q,"team":%q,"target_type":"mcp_server","target_name":"srv","client_ip":%q}`, user, team, ip)
	return decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: body}))
}

// Definitions for everyone, per IP, per team and shared, through the API:
// stored and read back, refused with the field named (an apply with one
// bad definition stores nothing), exported and applied back unchanged,
// and enforced through POST /api/check and GET /api/validate.
func TestEveryoneTeamsAndSharedThroughTheAPI(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: gatewaySecret})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	ctx := t.Context()

	// Refusals name the field; the apply is refused whole.
	bad := group("typo", 120, 5, 0)
	bad.Per = "tenant"
	_, err := admin.PutDefinition(ctx, bad, client.WriteOptions{})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "per" ||
		ae.Errors[0].Message != `per: must be one of caller, ip, team, shared (got "tenant")` {
		t.Fatalf("per tenant: %v (%+v), want a 400 naming per", err, ae)
	}
	onTarget := targetLimit("mcp_server", "srv", 120, 10)
	onTarget.Everyone = true
	good := group("fine", 120, 5, 0)
	if _, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{good, onTarget}}, client.ApplyOptions{}); !errors.As(err, &ae) ||
		ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "definitions[1].everyone" {
		t.Fatalf("apply with everyone on a target: %v (%+v), want a 400 naming definitions[1].everyone", err, ae)
	}
	if _, err := admin.GetDefinition(ctx, good.Key()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused apply stored %s: %v", good.Key(), err)
	}
	_, err = admin.PutMembership(ctx, ratelimit.Membership{SubjectType: "team", Subject: "a|b", Groups: []string{"tenants"}}, client.WriteOptions{})
	if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "subject" {
		t.Errorf("team a|b: %v, want a 400 naming subject", err)
	}
	if a := send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw,
		body: `{"username":"a","team":"acme corp","target_type":"mcp_server","target_name":"srv"}`}); a.status != 400 || a.json(t)["errors"].([]any)[0].(map[string]any)["field"] != "team" {
		t.Errorf("check with team %q: %d %s, want a 400 naming team", "acme corp", a.status, a.body)
	}

	// Stored and read back as written; "per: caller" is the default and
	// reads back as no per.
	perIP := group("per-ip", 120, 3, 3)
	perIP.Everyone, perIP.Per = true, ratelimit.PerIP
	tenants := group("tenants", 120, 2, 2)
	tenants.Per = ratelimit.PerTeam
	pool := group("pool", 3600, 4, 0)
	pool.Per = ratelimit.PerShared
	plain := group("plain", 3600, 50, 0)
	plain.Per = ratelimit.PerCaller
	awayFromWindowEdge(t, 120)
	define(t, env, admin, perIP, tenants, pool, plain)
	for _, want := range []ratelimit.Definition{perIP, tenants, pool} {
		got, err := admin.GetDefinition(ctx, want.Key())
		if err != nil || got.Everyone != want.Everyone || got.Per != want.Per {
			t.Errorf("GET %s: everyone %v per %q (%v), want everyone %v per %q", want.Key(), got.Everyone, got.Per, err, want.Everyone, want.Per)
		}
	}
	if got, err := admin.GetDefinition(ctx, plain.Key()); err != nil || got.Per != "" {
		t.Errorf("GET %s: per %q (%v), want none (per caller is the default)", plain.Key(), got.Per, err)
	}
	for _, m := range []ratelimit.Membership{
		{SubjectType: "team", Subject: "acme", Groups: []string{"tenants"}},
		{SubjectType: "user", Subject: "erin", Groups: []string{"pool"}},
		{SubjectType: "user", Subject: "frank", Groups: []string{"pool"}},
	} {
		if _, err := admin.PutMembership(ctx, m, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refresh(t, env)

	// Per IP: three calls from an address, whoever makes them.
	for i, who := range []string{"", "alice", "bob"} {
		if r := checkTeam(t, hc, env, gw, who, "", "198.51.100.7"); !r.Allowed {
			t.Errorf("call %d from 198.51.100.7 (user %q): %+v, want allowed", i+1, who, r)
		}
	}
	if r := checkTeam(t, hc, env, gw, "carol", "", "198.51.100.7"); r.Allowed || fmt.Sprint(deniedIDs(r)) != "["+perIP.Key()+"]" ||
		len(r.Gates) != 1 || r.Gates[0]["matched_by"] != "everyone" {
		t.Errorf("4th call from 198.51.100.7: %+v, want throttled by %s, matched by everyone", r, perIP.Key())
	}
	// Per team: acme's members share 2, through /api/check and /api/validate.
	if r := checkTeam(t, hc, env, gw, "dave", "acme", ""); !r.Allowed || len(r.Gates) != 1 || r.Gates[0]["matched_by"] != "team:acme" {
		t.Errorf("acme's first call: %+v, want allowed by the team's gate, matched by team:acme", r)
	}
	if a := validate(t, hc, env, "/srv/mcp", "X-Auth-Username", "gina", "X-Auth-Team", "acme"); a.status != 200 {
		t.Errorf("acme's second call through /api/validate: %d %s", a.status, a.body)
	}
	if a := validate(t, hc, env, "/srv/mcp", "X-Auth-Username", "hank", "X-Auth-Team", "acme"); a.status != 403 || a.header.Get("X-RateLimit-Throttled") != "1" {
		t.Errorf("acme's third call through /api/validate: %d %v, want a throttled 403", a.status, a.header)
	}
	if r := checkTeam(t, hc, env, gw, "hank", "", ""); !r.Allowed {
		t.Errorf("hank without his team: %+v, want allowed", r)
	}
	// A quarantined team: every call naming it is refused, listed among
	// the quarantined callers.
	if _, err := admin.Quarantine(ctx, ratelimit.SubjectTeam, "evil", client.QuarantineRequest{Reason: "abuse"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	if r := checkTeam(t, hc, env, gw, "ivan", "evil", ""); r.Reason != "quarantined" || r.QuarantineScope != "caller" {
		t.Errorf("a call of the quarantined team: %+v, want quarantined (caller)", r)
	}
	if q, err := admin.ListQuarantine(ctx); err != nil || len(q.Callers) != 1 || q.Callers[0].ID != "team:evil" {
		t.Errorf("quarantined callers: %+v, %v, want team:evil", q.Callers, err)
	}
	// Shared: erin and frank draw from one pool of 4.
	allowed := 0
	for range 3 {
		for _, u := range []string{"erin", "frank"} {
			if checkTeam(t, hc, env, gw, u, "", "").Allowed {
				allowed++
			}
		}
	}
	if allowed != 4 {
		t.Errorf("6 calls of the pool's members: %d allowed, want 4", allowed)
	}
	// The buckets are listed by subject.
	for _, caller := range []string{"ip:198.51.100.7", "team:acme"} {
		cs, err := countersOf(admin.ListCounters(ctx, client.CounterSelector{Caller: caller}, 0))
		if err != nil || len(cs) != 1 {
			t.Errorf("counters of %s: %+v, %v, want its one bucket", caller, cs, err)
		}
	}

	// Export, then apply back: nothing changes.
	appliesBackUnchanged(t, admin)
	// Changing per is a change apply reports by field.
	tenants.Per = ratelimit.PerShared
	res, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{tenants}}, client.ApplyOptions{DryRun: true})
	if err != nil || res.Updated != 1 || len(res.Changes) != 1 || len(res.Changes[0].Fields) != 1 || res.Changes[0].Fields[0].Field != "per" {
		t.Errorf("apply per shared: %+v, %v, want one update of per", res, err)
	}
}
