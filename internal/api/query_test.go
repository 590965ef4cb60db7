package api_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

// queryRequests is, for every route, a request that succeeds (or would,
// without its query) and changes something when the route changes things.
// A route added to routes.go without a request here fails
// TestEveryRouteRefusesBadQuery.
var queryRequests = map[string]call{
	"GET /healthz":                               {method: "GET", path: "/healthz"},
	"GET /readyz":                                {method: "GET", path: "/readyz"},
	"GET /api/version":                           {method: "GET", path: "/api/version"},
	"GET /api/server":                            {method: "GET", path: "/api/server"},
	"GET /api/openapi.json":                      {method: "GET", path: "/api/openapi.json"},
	"GET /metrics":                               {method: "GET", path: "/metrics"},
	"GET /api/rate-limits":                       {method: "GET", path: "/api/rate-limits"},
	"GET /api/rate-limits/{id...}":               {method: "GET", path: "/api/rate-limits/caller:group:devs:60"},
	"PUT /api/rate-limits/{id...}":               {method: "PUT", path: "/api/rate-limits/caller:group:new:60", body: `{"axis":"caller","entity_type":"group","name":"new","window_seconds":60,"user_max_requests":100,"enabled":true}`},
	"DELETE /api/rate-limits/{id...}":            {method: "DELETE", path: "/api/rate-limits/caller:group:gone:60"},
	"POST /api/rate-limits-enabled/{id...}":      {method: "POST", path: "/api/rate-limits-enabled/caller:group:devs:60?enabled=false"},
	"GET /api/rate-limits-status":                {method: "GET", path: "/api/rate-limits-status?username=alice"},
	"GET /api/rate-limit-memberships":            {method: "GET", path: "/api/rate-limit-memberships"},
	"GET /api/rate-limit-memberships/{id...}":    {method: "GET", path: "/api/rate-limit-memberships/user:alice"},
	"PUT /api/rate-limit-memberships/{id...}":    {method: "PUT", path: "/api/rate-limit-memberships/user:bob", body: `{"subject_type":"user","subject":"bob","groups":["devs"]}`},
	"DELETE /api/rate-limit-memberships/{id...}": {method: "DELETE", path: "/api/rate-limit-memberships/user:alice"},
	"GET /api/rate-limit-quarantine":             {method: "GET", path: "/api/rate-limit-quarantine"},
	"POST /api/rate-limit-quarantine/{id...}":    {method: "POST", path: "/api/rate-limit-quarantine/user:carol", body: `{"reason":"test"}`},
	"DELETE /api/rate-limit-quarantine/{id...}":  {method: "DELETE", path: "/api/rate-limit-quarantine/user:dave"},
	"GET /api/rate-limit-admins":                 {method: "GET", path: "/api/rate-limit-admins"},
	"PUT /api/rate-limit-admins/{id...}":         {method: "PUT", path: "/api/rate-limit-admins/user:eve"},
	"DELETE /api/rate-limit-admins/{id...}":      {method: "DELETE", path: "/api/rate-limit-admins/user:root"},
	"GET /api/tokens":                            {method: "GET", path: "/api/tokens"},
	"POST /api/tokens":                           {method: "POST", path: "/api/tokens", body: `{"name":"new-token","role":"viewer"}`},
	"DELETE /api/tokens/{name...}":               {method: "DELETE", path: "/api/tokens/old-token"},
	"GET /api/enforcement":                       {method: "GET", path: "/api/enforcement"},
	"PUT /api/enforcement":                       {method: "PUT", path: "/api/enforcement", body: `{"enabled":false,"reason":"test"}`},
	"GET /api/audit":                             {method: "GET", path: "/api/audit"},
	"GET /api/rate-limit-events":                 {method: "GET", path: "/api/rate-limit-events"},
	"POST /api/check":                            {method: "POST", path: "/api/check", body: `{"username":"alice"}`},
	"GET /api/validate":                          {method: "GET", path: "/api/validate"},
	"POST /api/auth-events":                      {method: "POST", path: "/api/auth-events", body: `{"client_ip":"192.0.2.7","outcome":"failure"}`},
	"GET /api/auth-lockout":                      {method: "GET", path: "/api/auth-lockout?client_ip=192.0.2.7"},
	"GET /api/auth-lockouts":                     {method: "GET", path: "/api/auth-lockouts"},
	"DELETE /api/auth-lockouts/{address...}":     {method: "DELETE", path: "/api/auth-lockouts/198.51.100.77"},
	"GET /api/rate-limit-counters":               {method: "GET", path: "/api/rate-limit-counters?caller=user:alice"},
	"DELETE /api/rate-limit-counters":            {method: "DELETE", path: "/api/rate-limit-counters?caller=user:alice"},
	"POST /api/apply":                            {method: "POST", path: "/api/apply", body: `{"definitions":[{"axis":"caller","entity_type":"group","name":"applied","window_seconds":60,"user_max_requests":100,"enabled":true}]}`},
}

// validValues are values the parameters picked below accept.
var validValues = map[string]string{"dry_run": "false", "limit": "1", "enabled": "false", "client_ip": "192.0.2.7", "caller": "user:alice"}

// queryFixture makes what queryRequests change exist.
func queryFixture(t *testing.T, env *apitest.Env) {
	t.Helper()
	for _, c := range []call{
		{method: "PUT", path: "/api/rate-limits/caller:group:devs:60", body: `{"axis":"caller","entity_type":"group","name":"devs","window_seconds":60,"user_max_requests":100,"enabled":true}`},
		{method: "PUT", path: "/api/rate-limits/caller:group:gone:60", body: `{"axis":"caller","entity_type":"group","name":"gone","window_seconds":60,"user_max_requests":100,"enabled":true}`},
		{method: "PUT", path: "/api/rate-limit-memberships/user:alice", body: `{"subject_type":"user","subject":"alice","groups":["devs"]}`},
		{method: "POST", path: "/api/rate-limit-quarantine/user:dave", body: `{"reason":"test"}`},
		{method: "PUT", path: "/api/rate-limit-admins/user:root"},
		{method: "POST", path: "/api/tokens", body: `{"name":"old-token","role":"viewer"}`},
	} {
		c.token = env.AdminToken
		if a := do(t, env.URL, c); a.status >= 300 {
			t.Fatalf("fixture %s %s: %d %s", c.method, c.path, a.status, a.body)
		}
	}
	// A gateway's lockout, for the lift to lift.
	for range 5 {
		c := call{method: "POST", path: "/api/auth-events", token: env.AdminToken, body: `{"client_ip":"198.51.100.77","outcome":"failure"}`}
		if a := do(t, env.URL, c); a.status >= 300 {
			t.Fatalf("fixture lockout: %d %s", a.status, a.body)
		}
	}
}

// withQuery adds extra to the query of c's path.
func withQuery(c call, extra string) call {
	if strings.Contains(c.path, "?") {
		c.path += "&" + extra
	} else {
		c.path += "?" + extra
	}
	return c
}

// TestEveryRouteRefusesBadQuery: a query parameter a route does not take,
// a pair holding ';' (which Go's url.Values drops without a word) and a
// parameter given twice answer 400 naming the parameter, on every route,
// and change nothing; the same request without them then succeeds.
func TestEveryRouteRefusesBadQuery(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{GatewaySecret: "s3cret", TrustedProxies: mustPrefixes("127.0.0.0/8")})
	c := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gw", "enforcer")
	queryFixture(t, env)
	routes := env.Server.RouteQueries()
	for _, rt := range routes {
		req, ok := queryRequests[rt.Pattern]
		if !ok {
			t.Errorf("route %s has no request in queryRequests: add one", rt.Pattern)
			continue
		}
		req.token = env.AdminToken
		if strings.Contains(rt.Pattern, "/api/check") || strings.Contains(rt.Pattern, "/api/auth-event") || strings.HasSuffix(rt.Pattern, "/api/auth-lockout") {
			req.token = gw
		}
		if rt.Pattern == "GET /api/validate" {
			req.header = map[string]string{"X-Gateway-Secret": "s3cret", "X-Original-URI": "/mcp/x", "X-Auth-Username": "alice"}
		}
		// A parameter the route takes, to repeat and to spoil with ';'.
		name, value := "nosuch", "1"
		for _, p := range rt.Params {
			if v, ok := validValues[p]; ok && !strings.Contains(req.path, p+"=") {
				name, value = p, v
				break
			}
		}
		bad := []struct {
			query, field, says string
		}{
			{"dryrun=true", "dryrun", "unknown query parameter"},
			{name + "=" + value + ";", name, "';'"},
			{"x=1;" + name + "=" + value, "x", "';'"},
			{name + "=" + value + "&" + name + "=" + value, name, "more than once"},
		}
		if name == "nosuch" {
			bad[3].says = "unknown query parameter"
		}
		for _, b := range bad {
			before := takeStateSnapshot(t, c, env)
			a := do(t, env.URL, withQuery(req, b.query))
			what := rt.Pattern + ": " + withQuery(req, b.query).path
			if a.status != 400 || a.header.Get("Content-Type") != "application/problem+json" {
				t.Errorf("%s: %d %s, want a 400 problem", what, a.status, a.body)
				continue
			}
			p := a.json(t)
			detail, _ := p["detail"].(string)
			if !strings.Contains(detail, b.field+": ") || !strings.Contains(detail, b.says) {
				t.Errorf("%s: detail %q does not name %s with %q", what, detail, b.field, b.says)
			}
			if errs, _ := p["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["field"] != b.field {
				t.Errorf("%s: errors %v do not name %s", what, p["errors"], b.field)
			}
			if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
				t.Errorf("%s changed something: %s", what, d)
			}
		}
		// Without the bad query the request is one the route serves.
		if a := do(t, env.URL, req); a.status >= 300 {
			t.Errorf("%s without a bad query: %d %s", rt.Pattern, a.status, a.body)
		}
	}
	if len(routes) != len(queryRequests) {
		t.Errorf("queryRequests has %d requests for %d routes: drop those of routes gone", len(queryRequests), len(routes))
	}
}

// TestQueryValuesFollowTheirRule: the filters of the defects once read as
// "no filter" list everything; now each is a 400 naming the parameter.
func TestQueryValuesFollowTheirRule(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	queryFixture(t, env)
	for _, c := range []struct{ path, field, says string }{
		{"/api/rate-limit-events?subject=user:no;body", "subject", "';'"},
		{"/api/rate-limits?name=nosuch;x", "name", "';'"},
		{"/api/rate-limits?axis=bogus", "axis", "must be one of caller, target, caller_target, quarantine"},
		{"/api/rate-limits?entity_type=bogus", "entity_type", "must be one of"},
		{"/api/rate-limit-memberships?subject_type=bogus", "subject_type", "must be one of"},
		{"/api/rate-limits?limit=0", "limit", "must be between 1 and 10000"},
		{"/api/audit?since=yesterday", "since", "RFC 3339"},
		{"/api/rate-limits?name=%zz", "name", "percent-encoding"},
	} {
		a := do(t, env.URL, call{method: "GET", path: c.path, token: env.AdminToken})
		detail, _ := a.json(t)["detail"].(string)
		if a.status != 400 || !strings.Contains(detail, c.field+": ") || !strings.Contains(detail, c.says) {
			t.Errorf("GET %s: %d %q, want 400 naming %s with %q", c.path, a.status, detail, c.field, c.says)
		}
	}
	// An unknown path keeps its 404 whatever its query.
	if a := do(t, env.URL, call{method: "GET", path: "/api/nosuch?x=1;y", token: env.AdminToken}); a.status != 404 {
		t.Errorf("GET /api/nosuch?x=1;y: %d %s, want 404", a.status, a.body)
	}
	// The defects' DELETEs: both once deleted.
	for _, q := range []string{"dryrun=true", "dry_run=true;"} {
		a := do(t, env.URL, call{method: "DELETE", path: "/api/rate-limits/caller:group:gone:60?" + q, token: env.AdminToken})
		if a.status != 400 {
			t.Errorf("DELETE ?%s: %d %s, want 400", q, a.status, a.body)
		}
	}
	if a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits/caller:group:gone:60", token: env.AdminToken}); a.status != 200 {
		t.Errorf("the definition is gone after refused DELETEs: %d %s", a.status, a.body)
	}
}

// TestDeclaredQueryParametersAreTheOpenAPIOnes: what each route accepts
// (routes.go) is what /api/openapi.json documents for it, so neither can
// drift from the other.
func TestDeclaredQueryParametersAreTheOpenAPIOnes(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	a := do(t, env.URL, call{method: "GET", path: "/api/openapi.json", token: env.AdminToken})
	var doc struct {
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Parameters map[string]openAPIParam
		}
	}
	if err := json.Unmarshal(a.body, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	wildcard := regexp.MustCompile(`\{([a-z_]+)\.\.\.\}`)
	for _, rt := range env.Server.RouteQueries() {
		method, path, _ := strings.Cut(rt.Pattern, " ")
		path = wildcard.ReplaceAllString(path, "{$1}")
		var op struct{ Parameters []openAPIParam }
		if err := json.Unmarshal(doc.Paths[path][strings.ToLower(method)], &op); err != nil {
			t.Errorf("%s: not in openapi.json: %v", rt.Pattern, err)
			continue
		}
		// Parameters of the path, shared by its methods, and the method's.
		var shared []openAPIParam
		_ = json.Unmarshal(doc.Paths[path]["parameters"], &shared)
		var documented []string
		for _, p := range append(shared, op.Parameters...) {
			if name, ok := strings.CutPrefix(p.Ref, "#/components/parameters/"); ok {
				p = doc.Components.Parameters[name]
			}
			if p.In == "query" {
				documented = append(documented, p.Name)
			}
		}
		declared := slices.Clone(rt.Params)
		slices.Sort(declared)
		slices.Sort(documented)
		if !slices.Equal(declared, documented) {
			t.Errorf("%s: routes.go declares %v, openapi.json documents %v", rt.Pattern, declared, documented)
		}
	}
}

type openAPIParam struct {
	Ref  string `json:"$ref"`
	Name string
	In   string
}
