package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// send is do through hc (the contract client, so every answer is checked
// against docs/openapi.yaml).
func send(t *testing.T, hc *http.Client, base string, c call) answer {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequest(c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: bytes.TrimSpace(b)}
}

// awayFromWindowEdge waits out the last seconds of a fixed window, so a
// test that counts calls within one window does not see it turn.
func awayFromWindowEdge(t *testing.T, window int64) {
	t.Helper()
	now := time.Now()
	if left := window - now.Unix()%window; left <= 3 {
		time.Sleep(time.Duration(left)*time.Second + 100*time.Millisecond)
	}
}

func targetLimit(entityType, name string, window, limit int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: entityType, Name: name, WindowSeconds: window, MaxRequests: ptr(limit), Enabled: true}
}

// define stores definitions through the API and makes the enforcer see
// them now rather than within the second LISTEN/NOTIFY takes.
func define(t *testing.T, env *apitest.Env, admin *client.Client, defs ...ratelimit.Definition) {
	t.Helper()
	for _, d := range defs {
		if _, err := admin.PutDefinition(t.Context(), d, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", d.Key(), err)
		}
	}
	refresh(t, env)
}

func refresh(t *testing.T, env *apitest.Env) {
	t.Helper()
	if err := env.Enforcer.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// breakCounters makes every counter round trip fail, as a database that
// lost its counters function would.
func breakCounters(t *testing.T, env *apitest.Env) {
	t.Helper()
	if _, err := env.Store.Pool().Exec(context.Background(), `alter function rl_take_024 rename to rl_take_gone`); err != nil {
		t.Fatal(err)
	}
}

type checkResult struct {
	Allowed         bool             `json:"allowed"`
	Reason          string           `json:"reason"`
	Limit           int64            `json:"limit"`
	Remaining       int64            `json:"remaining"`
	Reset           int64            `json:"reset"`
	RetryAfter      int64            `json:"retry_after"`
	Gates           []map[string]any `json:"gates"`
	QuarantineScope string           `json:"quarantine_scope"`
}

func decodeCheck(t *testing.T, a answer) checkResult {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("check: %d %s, want 200", a.status, a.body)
	}
	var r checkResult
	dec := json.NewDecoder(bytes.NewReader(a.body))
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("check answer %s: %v", a.body, err)
	}
	return r
}

func TestCheckDecides(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "srv", 60, 2), targetLimit("mcp_server", "srv", 3600, 100))

	body := `{"username":"alice","client_id":"","is_admin":false,"target_type":"mcp_server","target_name":"/srv/","tool":"","cost":1}`
	check := func() (answer, checkResult) {
		a := send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: body})
		return a, decodeCheck(t, a)
	}
	for i, want := range []int64{1, 0} {
		a, r := check()
		if !r.Allowed || r.Reason != "allowed" || r.Limit != 2 || r.Remaining != want || r.RetryAfter != 0 || len(r.Gates) != 2 {
			t.Fatalf("call %d: %s", i+1, a.body)
		}
		if r.Reset%60 != 0 || r.Reset <= time.Now().Unix() || r.Reset > time.Now().Unix()+60 {
			t.Errorf("call %d: reset %d is not the end of this minute", i+1, r.Reset)
		}
		if a.header.Get("X-RateLimit-Limit") != "2" || a.header.Get("X-RateLimit-Remaining") != strconv.FormatInt(want, 10) ||
			a.header.Get("X-RateLimit-Reset") != strconv.FormatInt(r.Reset, 10) ||
			// Every policy that applied, the tightest first.
			a.header.Get("RateLimit-Policy") != `"target:mcp_server:srv:60";q=2;w=60, "target:mcp_server:srv:3600";q=100;w=3600` ||
			a.header.Get("Retry-After") != "" {
			t.Errorf("call %d headers: %v", i+1, a.header)
		}
	}
	a, r := check()
	if r.Allowed || r.Reason != "throttled" || r.Limit != 2 || r.Remaining != 0 || r.RetryAfter < 1 || r.RetryAfter > 60 {
		t.Errorf("third call: %s", a.body)
	}
	if a.header.Get("Retry-After") != strconv.FormatInt(r.RetryAfter, 10) || a.header.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("throttled headers: %v", a.header)
	}
	for _, g := range r.Gates {
		if g["definition_id"] == "target:mcp_server:srv:3600" && g["count"] != 2.0 {
			t.Errorf("the hourly gate counted the denied call: %v", g)
		}
	}

	// The SDK sees the same decision.
	res, err := clientFor(t, env, gw).Check(t.Context(), client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "srv"})
	if err != nil || res.Allowed || res.Reason != client.ReasonThrottled || res.Gates[0].WindowSeconds == 0 {
		t.Errorf("client check: %+v, %v", res, err)
	}

	// A control-plane call: allowed, nothing counted, no headers.
	a, r = func() (answer, checkResult) {
		a := send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: `{"username":"alice"}`})
		return a, decodeCheck(t, a)
	}()
	if !r.Allowed || r.Limit != 0 || r.Reset != 0 || len(r.Gates) != 0 || a.header.Get("X-RateLimit-Limit") != "" || !strings.Contains(string(a.body), `"gates":[]`) {
		t.Errorf("control-plane call: %s %v", a.body, a.header)
	}

	// Quarantine: a decision too, without rate headers or a retry.
	if _, err := admin.Quarantine(t.Context(), "user", "mallory", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	a = send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw,
		body: `{"username":"mallory","target_type":"mcp_server","target_name":"srv"}`})
	if r := decodeCheck(t, a); r.Allowed || r.Reason != "quarantined" || r.QuarantineScope != "caller" || r.RetryAfter != 0 ||
		a.header.Get("X-RateLimit-Limit") != "" || a.header.Get("Retry-After") != "" {
		t.Errorf("quarantined: %s %v", a.body, a.header)
	}
}

func TestCheckAuthorizationAndValidation(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{AuthMaxFailures: -1})
	hc := contractHTTPClient(t)
	viewer := env.Token(t, "viewer", "viewer")
	gw := env.Token(t, "gateway", "enforcer")
	const ok = `{"username":"alice","target_type":"mcp_server","target_name":"srv"}`
	cases := []struct {
		name   string
		c      call
		status int
		detail string
	}{
		{"no token", call{method: "POST", path: "/api/check", body: ok}, 401, "missing bearer token"},
		{"viewer may not decide", call{method: "POST", path: "/api/check", token: viewer, body: ok}, 403, "role viewer"},
		{"enforcer decides", call{method: "POST", path: "/api/check", token: gw, body: ok}, 200, ""},
		{"admin decides", call{method: "POST", path: "/api/check", token: env.AdminToken, body: ok}, 200, ""},
		{"enforcer may not read definitions", call{method: "GET", path: "/api/rate-limits", token: gw}, 403, "role enforcer"},
		{"unknown field", call{method: "POST", path: "/api/check", token: gw, body: `{"user":"alice"}`}, 400, "user: unknown field"},
		{"empty body", call{method: "POST", path: "/api/check", token: gw}, 400, "empty"},
		{"unknown target type", call{method: "POST", path: "/api/check", token: gw, body: `{"username":"a","target_type":"mcp_tool","target_name":"s:t"}`}, 400, "target_type"},
		{"target without a name", call{method: "POST", path: "/api/check", token: gw, body: `{"username":"a","target_type":"mcp_server","target_name":"/"}`}, 400, "target_name"},
		{"name without a type", call{method: "POST", path: "/api/check", token: gw, body: `{"username":"a","target_name":"srv"}`}, 400, "target_name"},
		{"negative cost", call{method: "POST", path: "/api/check", token: gw, body: `{"username":"a","target_type":"mcp_server","target_name":"s","cost":-1}`}, 400, "cost"},
		{"huge cost", call{method: "POST", path: "/api/check", token: gw, body: `{"username":"a","target_type":"mcp_server","target_name":"s","cost":10000000}`}, 400, "cost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := send(t, hc, env.URL, c.c)
			if a.status != c.status {
				t.Fatalf("status %d, want %d: %s", a.status, c.status, a.body)
			}
			if c.detail != "" && !strings.Contains(a.json(t)["detail"].(string), c.detail) {
				t.Errorf("detail %q does not mention %q", a.json(t)["detail"], c.detail)
			}
		})
	}
}

const gatewaySecret = "test-gateway-secret-0123456789"

// validateEnv is an rlapi that trusts the loopback as its gateway.
func validateEnv(t *testing.T) (*apitest.Env, *client.Client) {
	t.Helper()
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: gatewaySecret})
	return env, clientFor(t, env, env.AdminToken)
}

// validate sends what nginx's auth_request subrequest sends.
func validate(t *testing.T, hc *http.Client, env *apitest.Env, uri string, extra ...string) answer {
	t.Helper()
	h := map[string]string{"X-Gateway-Secret": gatewaySecret, "X-Original-URI": uri, "X-Auth-Username": "alice"}
	for i := 0; i+1 < len(extra); i += 2 {
		if extra[i+1] == "" {
			delete(h, extra[i])
			continue
		}
		h[extra[i]] = extra[i+1]
	}
	return send(t, hc, env.URL, call{method: "GET", path: "/api/validate", header: h})
}

func TestValidateClassifiesTheTarget(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	define(t, env, admin,
		targetLimit("a2a_agent", "/booking", 60, 100),
		targetLimit("a2a_agent", "/travel/planner", 60, 100),
		targetLimit("mcp_server", "srv", 60, 100),
		targetLimit("mcp_server", "peer/x", 60, 100),
		targetLimit("mcp_server", "api", 60, 100),
	)
	cases := []struct {
		uri    string
		policy string // the definition the call was counted against; "" for none
	}{
		{"/agent/booking", "target:a2a_agent:/booking:60"},
		{"/agent/booking/", "target:a2a_agent:/booking:60"},
		{"/agent/travel/planner?x=1", "target:a2a_agent:/travel/planner:60"},
		{"/srv/mcp", "target:mcp_server:srv:60"},
		{"/srv/sse", "target:mcp_server:srv:60"},
		{"/srv/messages?session_id=42", "target:mcp_server:srv:60"},
		{"/srv/mcp/", "target:mcp_server:srv:60"},
		{"/peer/x/mcp", "target:mcp_server:peer/x:60"},
		{"//peer//x/mcp", "target:mcp_server:peer/x:60"},
		{"/srv/mc%70", "target:mcp_server:srv:60"},
		{"/other/../srv/./mcp", "target:mcp_server:srv:60"},
		{"http://gw.example.com/srv/mcp", "target:mcp_server:srv:60"},
		{"/api/rate-limits", ""},
		{"/api/srv/mcp", ""},
		{"/api", ""},
		{"/api/../srv/mcp", "target:mcp_server:srv:60"},
		{"/mcp", ""},
		{"/agent/", ""},
		{"/index.html", ""},
		{"/srv/mcp.js", ""},
	}
	for _, c := range cases {
		a := validate(t, hc, env, c.uri)
		if a.status != http.StatusOK {
			t.Errorf("%s: %d %s, want 200", c.uri, a.status, a.body)
			continue
		}
		got := a.header.Get("RateLimit-Policy")
		if c.policy == "" {
			if got != "" || a.header.Get("X-RateLimit-Limit") != "" {
				t.Errorf("%s: counted against %s, want no target", c.uri, got)
			}
			continue
		}
		if want := `"` + c.policy + `";q=100;w=60`; got != want {
			t.Errorf("%s: RateLimit-Policy %q, want %q", c.uri, got, want)
		}
	}
}

func TestValidateTrustsOnlyTheGateway(t *testing.T) {
	t.Parallel()
	hc := contractHTTPClient(t)
	env, _ := validateEnv(t)
	cases := []struct {
		name   string
		extra  []string
		status int
		detail string
	}{
		{"right secret", nil, 200, ""},
		{"wrong secret", []string{"X-Gateway-Secret", "guess"}, 401, "X-Gateway-Secret"},
		{"secret with a different length", []string{"X-Gateway-Secret", gatewaySecret + "x"}, 401, "X-Gateway-Secret"},
		{"no secret", []string{"X-Gateway-Secret", ""}, 401, "X-Gateway-Secret"},
		{"a bearer token is no substitute", []string{"X-Gateway-Secret", "", "Authorization", "Bearer " + env.AdminToken}, 401, ""},
		{"no X-Original-URI", []string{"X-Original-URI", ""}, 400, "X-Original-URI"},
	}
	for _, c := range cases {
		a := validate(t, hc, env, "/srv/mcp", c.extra...)
		if a.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, a.status, a.body, c.status)
			continue
		}
		if c.detail != "" && !strings.Contains(a.json(t)["detail"].(string), c.detail) {
			t.Errorf("%s: detail %q does not mention %q", c.name, a.json(t)["detail"], c.detail)
		}
	}
	// Wrong secrets from the gateway's address never lock it out.
	if a := validate(t, hc, env, "/srv/mcp"); a.status != 200 {
		t.Errorf("after wrong secrets: %d %s", a.status, a.body)
	}

	// A peer outside the trusted proxies is refused, right secret or not,
	// and locked out after repeated tries.
	untrusted := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("10.0.0.0/8"), GatewaySecret: gatewaySecret, AuthMaxFailures: 2})
	for i := range 2 {
		a := validate(t, hc, untrusted, "/srv/mcp")
		if a.status != 401 || !strings.Contains(a.json(t)["detail"].(string), "trusted proxies") {
			t.Fatalf("untrusted peer, try %d: %d %s, want 401", i+1, a.status, a.body)
		}
	}
	if a := validate(t, hc, untrusted, "/srv/mcp"); a.status != 429 || a.header.Get("Retry-After") == "" {
		t.Errorf("untrusted peer after 2 refusals: %d %v, want 429 with Retry-After", a.status, a.header)
	}

	// No secret configured: /api/validate is off.
	off := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8")})
	if a := validate(t, hc, off, "/srv/mcp", "X-Gateway-Secret", ""); a.status != 401 || !strings.Contains(string(a.body), "no gateway secret") {
		t.Errorf("no secret configured: %d %s, want 401", a.status, a.body)
	}
}

func TestValidateDenials(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "srv", 60, 2))

	for i := range 2 {
		a := validate(t, hc, env, "/srv/mcp")
		if a.status != 200 || a.header.Get("X-RateLimit-Limit") != "2" || a.header.Get("X-RateLimit-Throttled") != "" {
			t.Fatalf("call %d: %d %v", i+1, a.status, a.header)
		}
	}

	// Throttled: 403 (auth_request passes on nothing else), marked.
	a := validate(t, hc, env, "/srv/mcp")
	if a.status != http.StatusForbidden || a.header.Get("X-RateLimit-Throttled") != "1" {
		t.Fatalf("throttled: %d %v, want 403 with X-RateLimit-Throttled: 1", a.status, a.header)
	}
	retry, _ := strconv.Atoi(a.header.Get("Retry-After"))
	if a.header.Get("X-RateLimit-Limit") != "2" || a.header.Get("X-RateLimit-Remaining") != "0" || a.header.Get("X-RateLimit-Reset") == "" ||
		a.header.Get("RateLimit") == "" || retry < 1 || retry > 60 || a.header.Get("X-RateLimit-Unavailable") != "" {
		t.Errorf("throttled headers: %v", a.header)
	}

	// Quarantined: a plain 403, no marker, no rate headers.
	if _, err := admin.Quarantine(t.Context(), "user", "mallory", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)
	a = validate(t, hc, env, "/other/mcp", "X-Auth-Username", "mallory")
	if a.status != http.StatusForbidden {
		t.Fatalf("quarantined: %d %s, want 403", a.status, a.body)
	}
	for _, h := range []string{"X-RateLimit-Throttled", "X-RateLimit-Unavailable", "X-RateLimit-Limit", "X-RateLimit-Remaining",
		"X-RateLimit-Reset", "RateLimit-Policy", "RateLimit", "Retry-After"} {
		if v := a.header.Get(h); v != "" {
			t.Errorf("quarantine 403 carries %s: %q", h, v)
		}
	}
	// ...except for an administrator, and never on the control plane.
	if a := validate(t, hc, env, "/other/mcp", "X-Auth-Username", "mallory", "X-Auth-Admin", "true"); a.status != 200 {
		t.Errorf("quarantined caller with X-Auth-Admin: %d, want 200", a.status)
	}
	if a := validate(t, hc, env, "/api/rate-limits", "X-Auth-Username", "mallory"); a.status != 200 {
		t.Errorf("quarantined caller on the control plane: %d, want 200", a.status)
	}

	// Fail-closed: a 403 too, but never marked as a throttle.
	closed := targetLimit("mcp_server", "vault", 60, 100)
	closed.FailClosed = true
	define(t, env, admin, closed, targetLimit("mcp_server", "roomy", 60, 100))
	breakCounters(t, env)
	a = validate(t, hc, env, "/vault/mcp")
	if a.status != http.StatusForbidden || a.header.Get("X-RateLimit-Throttled") != "" || a.header.Get("X-RateLimit-Unavailable") != "1" ||
		a.header.Get("Retry-After") != "1" || a.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("fail-closed: %d %v, want 403 marked unavailable, not throttled", a.status, a.header)
	}
	// A fail-open target with room still passes while the counters are
	// down (srv's limit, used up above, stays refused: the replica saw it
	// used up).
	if a := validate(t, hc, env, "/roomy/mcp", "X-Auth-Username", "bob"); a.status != 200 {
		t.Errorf("fail-open during the outage: %d", a.status)
	}
}
