package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// statusOf asks GET /api/rate-limits-status with q, as rlctl rate-limit
// status does.
func statusOf(t *testing.T, base, token string, q url.Values) client.StatusResult {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/rate-limits-status?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := contractHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res client.StatusResult
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s: %s", q.Encode(), resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		t.Fatal(err)
	}
	return res
}

// Status, the enforcer's plan and a decision agree, over a table of
// callers and definitions of every kind of limit: status lists exactly the
// definitions the plan says apply, every definition a decision's gates
// name is among them, and the ones a decision does not take are those the
// plan says a more restrictive definition outranked.
func TestStatusAgreesWithExplainAndCheck(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	tb := group("devs", 120, 40, 0)
	tb.Algorithm = ratelimit.AlgorithmTokenBucket
	shadow := group("devs", 3600, 500, 0)
	shadow.Mode = ratelimit.ModeShadow
	everyone := group("all", 60, 25, 25)
	everyone.Everyone = true
	perTeam, pool, perIP := group("tenants", 60, 40, 40), group("pool", 60, 50, 0), group("perip", 60, 90, 0)
	perTeam.Per, pool.Per, perIP.Per = ratelimit.PerTeam, ratelimit.PerShared, ratelimit.PerIP
	tier := ratelimit.Definition{Axis: "target", EntityType: "route", Name: "api", WindowSeconds: 60, Paths: []string{"/api/*"},
		MaxRequests: ptr(1000), IPMaxRequests: ptr(50), UserMaxRequests: ptr(20), AgentMaxRequests: ptr(30), TeamMaxRequests: ptr(200), Enabled: true}
	health := ratelimit.Definition{Axis: "target", EntityType: "route", Name: "health", WindowSeconds: 60, Paths: []string{"/health"}, Exempt: true, Enabled: true}
	tool := func(name, scope string, limit int) ratelimit.Definition {
		return ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: name, WindowSeconds: 60, MaxRequests: ptr(limit), ToolScope: scope, Enabled: true}
	}
	defs := []ratelimit.Definition{
		group("devs", 60, 100, 0), group("devs", 86400, 5000, 0), tb, shadow, everyone,
		{Axis: "caller_target", EntityType: "group", Name: "devs", WindowSeconds: 60, UserMaxRequests: ptr(30), Enabled: true},
		group("agents", 60, 0, 20), perTeam, pool, perIP, group("lan", 60, 110, 0),
		{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true},
		{Axis: "target", EntityType: "server_group", Name: "fragile", WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"mcpgw"}, Enabled: true},
		tool("mcpgw:search", "", 50), tool("mcpgw:*", ratelimit.ToolScopeTool, 60),
		tool("mcpgw:s*", ratelimit.ToolScopePrincipal, 80), tool("mcpgw:sea*", ratelimit.ToolScopePrincipalTool, 66),
		tier, health,
	}
	for _, d := range defs {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", d.Key(), err)
		}
	}
	for _, m := range []ratelimit.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"devs"}},
		{SubjectType: "team", Subject: "acme", Groups: []string{"tenants", "pool"}},
		{SubjectType: "client", Subject: "bot", Groups: []string{"agents"}},
		{SubjectType: "network", Subject: "10.0.0.0/8", Groups: []string{"lan", "perip"}},
	} {
		if _, err := c.PutMembership(ctx, m, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", m.Key(), err)
		}
	}
	// Decisions read the enforcer's snapshot, which hears of the writes a
	// moment later; the plan reads its rows afresh.
	if err := env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		check client.CheckRequest
	}{
		{"user in groups and team", client.CheckRequest{Username: "alice", Team: "acme", ClientIP: "203.0.113.7", TargetType: "mcp_server", TargetName: "mcpgw"}},
		{"user on a tool", client.CheckRequest{Username: "alice", Team: "acme", TargetType: "mcp_server", TargetName: "mcpgw", Tool: "search"}},
		{"user on a route and a target", client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw", Method: "GET", Path: "/api/v1/things"}},
		{"user on a route only", client.CheckRequest{Username: "alice", ClientIP: "203.0.113.7", Method: "POST", Path: "/api/x"}},
		{"agent on a tool", client.CheckRequest{ClientID: "bot", TargetType: "mcp_server", TargetName: "mcpgw", Tool: "list"}},
		{"anonymous in a network", client.CheckRequest{ClientIP: "10.1.2.3", TargetType: "mcp_server", TargetName: "mcpgw"}},
		{"anonymous outside networks", client.CheckRequest{ClientIP: "198.51.100.1", TargetType: "mcp_server", TargetName: "mcpgw", Tool: "search"}},
		{"unknown user elsewhere", client.CheckRequest{Username: "carol", TargetType: "a2a_agent", TargetName: "/booking"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.check
			q := url.Values{}
			for k, v := range map[string]string{"username": r.Username, "client_id": r.ClientID, "team": r.Team, "client_ip": r.ClientIP,
				"method": r.Method, "path": r.Path} {
				if v != "" {
					q.Set(k, v)
				}
			}
			call := enforce.Call{Username: r.Username, ClientID: r.ClientID, Team: r.Team, ClientIP: r.ClientIP,
				TargetType: r.TargetType, TargetName: r.TargetName, Tool: r.Tool, Method: r.Method, Path: r.Path}
			switch {
			case r.Tool != "":
				q.Set("entity_type", "mcp_tool")
				q.Set("name", r.TargetName+":"+r.Tool)
			case r.TargetType != "":
				q.Set("entity_type", r.TargetType)
				q.Set("name", r.TargetName)
			}
			st := statusOf(t, env.URL, env.AdminToken, q)
			plan, err := env.Enforcer.Explain(ctx, call)
			if err != nil {
				t.Fatal(err)
			}
			// A busy machine may answer by the fail policy (no gates);
			// the comparison needs a decision the counters made.
			var dec client.CheckResult
			for attempt := 0; ; attempt++ {
				if dec, err = c.Check(ctx, r); err != nil {
					t.Fatal(err)
				}
				if dec.Reason == client.ReasonAllowed || dec.Reason == client.ReasonThrottled || attempt == 20 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			var status, planned, outranked, decided []string
			for _, d := range st.Definitions {
				status = append(status, d.ID)
			}
			for _, pd := range plan.Definitions {
				if !slices.Contains(planned, pd.Definition.ID) {
					planned = append(planned, pd.Definition.ID)
				}
				if pd.OutrankedBy != "" || pd.Gate < 0 {
					// Outranked on a shared bucket, or kept per an
					// address or team the call does not name.
					outranked = append(outranked, pd.Definition.ID)
				}
			}
			for _, g := range dec.Gates {
				if !slices.Contains(decided, g.DefinitionID) {
					decided = append(decided, g.DefinitionID)
				}
			}
			slices.Sort(status)
			slices.Sort(planned)
			if !slices.Equal(status, planned) {
				t.Errorf("status lists\n  %s\nthe plan\n  %s", strings.Join(status, "\n  "), strings.Join(planned, "\n  "))
			}
			if len(decided) == 0 {
				t.Fatal("the decision took no gate; every call of the table is meant to meet some")
			}
			for _, id := range decided {
				if !slices.Contains(status, id) {
					t.Errorf("the decision's gate %s is not in status %v", id, status)
				}
			}
			for _, id := range status {
				if !slices.Contains(decided, id) && !slices.Contains(outranked, id) {
					t.Errorf("status lists %s, which the decision does not take and the plan does not say is outranked or keyless (decided %v)", id, decided)
				}
			}
		})
	}
	// A team alone: any caller of it meets the team's groups and the
	// definitions for everyone.
	st := statusOf(t, env.URL, env.AdminToken, url.Values{"team": {"acme"}})
	var ids []string
	for _, d := range st.Definitions {
		ids = append(ids, d.ID)
	}
	if !slices.Contains(st.Groups, "tenants") || !slices.Contains(ids, "caller:group:tenants:60") || !slices.Contains(ids, "caller:group:all:60") ||
		st.MatchedBy["caller:group:tenants:60"] != "team:acme" {
		t.Errorf("status of team acme: groups %v, definitions %v, matched_by %v", st.Groups, ids, st.MatchedBy)
	}
}
