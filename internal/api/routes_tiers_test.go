package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func routeDef(tier string, paths ...string) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: "route", Name: tier, WindowSeconds: 60, Paths: paths, Enabled: true}
}

// A route tier stored through the API limits POST /api/check calls by
// method and path, per client address and per user, and the gates name
// the pattern and dimension; an exempt route is never limited.
func TestRouteTiersThroughCheck(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	critical := routeDef("critical", "/Auth/Email/*", "/auth/sso/*")
	critical.Methods = []string{"post"}
	critical.IPMaxRequests, critical.UserMaxRequests = ptr(3), ptr(2)
	public := routeDef("public", "/docs", "/openapi.json")
	public.Exempt = true
	define(t, env, admin, critical, public)

	got, err := admin.GetDefinition(t.Context(), "target:route:critical:60")
	if err != nil || fmt.Sprint(got.Paths, got.Methods, *got.IPMaxRequests) != "[/auth/email/* /auth/sso/*] [POST] 3" {
		t.Fatalf("stored route: %+v, %v", got, err)
	}
	check := func(method, path, user, ip string) checkResult {
		t.Helper()
		body := fmt.Sprintf(`{"method":%q,"path":%q,"username":%q,"client_ip":%q}`, method, path, user, ip)
		return decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: body}))
	}
	for i, s := range []struct {
		method, path, user, ip string
		allowed                bool
		dimension              string
	}{
		{"POST", "/auth/email/login", "alice", "198.51.100.7", true, ""},
		{"post", "/AUTH/email/login?next=/", "alice", "198.51.100.7", true, ""},
		{"POST", "/auth/sso/start", "alice", "198.51.100.7", false, "user"},
		{"POST", "/auth/sso/start", "bob", "198.51.100.7", true, ""},
		{"POST", "/auth/sso/start", "", "198.51.100.7", false, "ip"},
		{"GET", "/auth/sso/start", "", "198.51.100.7", true, ""}, // the tier names POST only
	} {
		r := check(s.method, s.path, s.user, s.ip)
		if r.Allowed != s.allowed {
			t.Fatalf("step %d %s %s as %q: %+v, want allowed %v", i+1, s.method, s.path, s.user, r, s.allowed)
		}
		if !s.allowed {
			var refused []string
			for _, g := range r.Gates {
				if g["remaining"].(float64) == 0 && g["dimension"] == s.dimension {
					refused = append(refused, fmt.Sprint(g["definition_id"], " ", g["matched"]))
				}
			}
			if len(refused) != 1 || refused[0] != "target:route:critical:60 /auth/sso/*" || r.RetryAfter < 1 {
				t.Errorf("step %d: gates %v, want the critical tier's %s bucket used up, matched by /auth/sso/*", i+1, r.Gates, s.dimension)
			}
		}
	}
	for range 3 {
		if r := check("GET", "/docs", "alice", "198.51.100.7"); !r.Allowed || len(r.Gates) != 0 {
			t.Fatalf("exempt /docs: %+v", r)
		}
	}
	// The tier's per-caller buckets are listed by the target route:<tier>.
	counters, err := countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Target: "route:critical"}, 0))
	var keys []string
	for _, c := range counters {
		keys = append(keys, c.Key)
	}
	slices.Sort(keys)
	if err != nil || fmt.Sprint(keys) != "[ct|60|ip:198.51.100.7|route:critical ct|60|user:alice|route:critical ct|60|user:bob|route:critical]" {
		t.Errorf("counters of route:critical: %v, %v", keys, err)
	}
	// Status says which route applies to a path, and by which pattern.
	st, err := admin.Status(t.Context(), client.StatusQuery{Path: "/Auth/SSO/callback?x", Method: "post"})
	if err != nil || len(st.Matches) != 1 || st.Matches[0] != (client.StatusMatch{DefinitionID: "target:route:critical:60", Pattern: "/auth/sso/*"}) ||
		len(st.Target) != 1 {
		t.Errorf("status of /auth/sso/callback: %+v, %v", st, err)
	}
	if st, err := admin.Status(t.Context(), client.StatusQuery{Path: "/auth/sso/callback", Method: "GET"}); err != nil || len(st.Matches) != 0 {
		t.Errorf("status of GET /auth/sso/callback (the tier names POST): %+v, %v", st, err)
	}
	// A bad method or path is a 400 naming the field.
	a := send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: `{"method":"FETCH","path":"auth","username":"a"}`})
	if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"method"`) || !strings.Contains(string(a.body), `"field":"path"`) {
		t.Errorf("bad method and path: %d %s", a.status, a.body)
	}
}

// /api/validate feeds routes from X-Original-URI and X-Original-Method,
// for paths without a target too; the control plane stays unlimited.
func TestRouteTiersThroughValidate(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	high := routeDef("high", "/tokens/*", "/api/*")
	high.UserMaxRequests = ptr(1)
	define(t, env, admin, high)
	if a := validate(t, hc, env, "/tokens/new", "X-Original-Method", "POST"); a.status != http.StatusOK {
		t.Fatalf("first /tokens call: %d %s", a.status, a.body)
	}
	a := validate(t, hc, env, "/Tokens/other?x=1", "X-Original-Method", "GET")
	if a.status != http.StatusForbidden || a.header.Get("X-RateLimit-Throttled") != "1" {
		t.Errorf("second /tokens call: %d %v %s, want 403 throttled", a.status, a.header, a.body)
	}
	if a := validate(t, hc, env, "/tokens/x", "X-Auth-Username", "bob", "X-Original-Method", "BREW"); a.status != http.StatusOK {
		t.Errorf("bob, odd method: %d %s, want 200 (his own bucket; an odd method is no 400)", a.status, a.body)
	}
	for range 3 {
		if a := validate(t, hc, env, "/api/rate-limits"); a.status != http.StatusOK {
			t.Fatalf("the control plane matched by /api/*: %d, want 200 (never limited)", a.status)
		}
	}
	if a := validate(t, hc, env, "/elsewhere"); a.status != http.StatusOK {
		t.Errorf("a path no route matches: %d", a.status)
	}
}

// Bad routes are refused whole with a 400 naming each field at fault, and
// nothing is stored; an apply with one bad route stores nothing at all.
func TestRouteValidation(t *testing.T) {
	t.Parallel()
	_, admin := validateEnv(t)
	for _, c := range []struct {
		def    ratelimit.Definition
		fields []string
	}{
		{routeDef("t"), []string{"paths", "max_requests"}},
		{func() ratelimit.Definition {
			d := routeDef("t", "/auth/", "auth/*", "/a?b", "/ok/*", "/OK/*")
			d.UserMaxRequests = ptr(1)
			d.Methods = []string{"GET", "FETCH"}
			return d
		}(), []string{"paths[0]", "paths[1]", "paths[2]", "paths[4]", "methods[1]"}},
		{func() ratelimit.Definition {
			d := routeDef("t", "/docs")
			d.Exempt, d.MaxRequests = true, ptr(5)
			return d
		}(), []string{"max_requests"}},
		{func() ratelimit.Definition {
			d := targetLimit("mcp_server", "srv", 60, 5)
			d.Paths, d.IPMaxRequests, d.Exempt = []string{"/x"}, ptr(2), true
			return d
		}(), []string{"ip_max_requests", "paths", "exempt"}},
	} {
		_, err := admin.PutDefinition(t.Context(), c.def, client.WriteOptions{})
		var ve *client.APIError
		if !errors.As(err, &ve) || ve.StatusCode != http.StatusBadRequest {
			t.Errorf("put %+v: %v, want a validation error", c.def, err)
			continue
		}
		var fields []string
		for _, f := range ve.Errors {
			fields = append(fields, f.Field)
		}
		slices.Sort(fields)
		slices.Sort(c.fields)
		if fmt.Sprint(fields) != fmt.Sprint(c.fields) {
			t.Errorf("put %+v: fields %v (%v), want %v", c.def, fields, err, c.fields)
		}
	}
	if page, err := admin.ListDefinitions(t.Context(), client.DefinitionFilter{EntityType: "route"}); err != nil || len(page.Definitions) != 0 {
		t.Errorf("after refused writes, routes stored: %v %v", page.Definitions, err)
	}
}

// How /api/validate tells an MCP server or an A2A agent from a path is
// configuration (--mcp-suffixes, --a2a-prefixes): with rpc and agents,
// /x/rpc is the server x and /agents/b the agent /b, and /x/mcp is no
// longer a target.
func TestValidateClassifierConfig(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: gatewaySecret,
		Classifier: httpgate.Classifier{MCPSuffixes: []string{"rpc"}, A2APrefixes: []string{"agents"}}})
	admin := clientFor(t, env, env.AdminToken)
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "x", 60, 1), targetLimit("a2a_agent", "/b", 60, 1))
	for _, s := range []struct {
		uri    string
		status int
	}{
		{"/x/rpc", http.StatusOK}, {"/X/rpc?q", http.StatusForbidden},
		{"/agents/b", http.StatusOK}, {"/agents/B/", http.StatusForbidden},
		{"/x/mcp", http.StatusOK}, {"/x/mcp", http.StatusOK}, {"/agent/b", http.StatusOK}, {"/agent/b", http.StatusOK},
	} {
		if a := validate(t, hc, env, s.uri); a.status != s.status {
			t.Errorf("%s: %d %s, want %d", s.uri, a.status, a.body, s.status)
		}
	}
}

// /api/validate learns the tool and its kind from X-Tool-Name and
// X-Tool-Kind: a glob tool limit applies to the calls that send them and
// not to those that do not (a gateway that cannot see the tool); a
// definition with kinds applies only to its kinds. POST /api/check takes
// kind, and refuses an unknown one naming it.
func TestToolHeadersThroughValidate(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	del := targetLimit("mcp_tool", "*:delete_*", 60, 1)
	del.ToolScope = "principal_tool"
	prompts := targetLimit("mcp_tool", "srv:*", 60, 1)
	prompts.Kinds = []string{"Prompt"}
	define(t, env, admin, del, prompts)
	got, err := admin.GetDefinition(t.Context(), "target:mcp_tool:srv:*:60")
	if err != nil || fmt.Sprint(got.Kinds) != "[prompt]" || got.ToolScope != "" {
		t.Fatalf("stored: %+v %v", got, err)
	}
	for i, s := range []struct {
		tool, kind string
		status     int
	}{
		{"delete_repo", "", http.StatusOK},
		{"delete_repo", "tool", http.StatusForbidden},
		{"", "", http.StatusOK}, // no tool header: the tool limit does not apply
		{"delete_branch", "", http.StatusOK},
		{"greet", "prompt", http.StatusOK},
		{"greet", "prompt", http.StatusForbidden},
		{"greet", "tool", http.StatusOK},
	} {
		a := validate(t, hc, env, "/srv/mcp", "X-Tool-Name", s.tool, "X-Tool-Kind", s.kind)
		if a.status != s.status {
			t.Errorf("step %d tool %q kind %q: %d %s, want %d", i+1, s.tool, s.kind, a.status, a.body, s.status)
		}
	}
	gw := env.Token(t, "gateway", "enforcer")
	a := send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw,
		body: `{"username":"a","target_type":"mcp_server","target_name":"srv","tool":"x","kind":"sampling"}`})
	if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"kind"`) {
		t.Errorf("unknown kind: %d %s", a.status, a.body)
	}
	bad := targetLimit("mcp_tool", "srv:*", 60, 1)
	bad.Kinds, bad.ToolScope = []string{"tool", "sampling"}, "caller"
	_, err = admin.PutDefinition(t.Context(), bad, client.WriteOptions{})
	var ae *client.APIError
	if !errors.As(err, &ae) || len(ae.Errors) != 2 || ae.Errors[0].Field != "kinds[1]" || ae.Errors[1].Field != "tool_scope" {
		t.Errorf("bad kinds and scope: %v", err)
	}
}
