package cli_test

// docs/examples' route and tool files through httpgate.Middleware,
// the Go gateway's door, on the enforcer of the rlapi rlctl applied them
// to: the same outcomes docs/examples' comments promise of POST /api/check
// (examples_routes_test.go) and of /api/validate behind nginx
// (internal/api/nginx_examples_test.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/httpgate"
)

// exampleMiddleware serves httpgate.Middleware, in front of a 200 handler,
// on the enforcer of the rlapi file was applied to. classify maps a
// request to its call; the client address comes from X-Forwarded-For (the
// test client, on the loopback, is the trusted proxy) and the team from
// X-Auth-Team.
func exampleMiddleware(t *testing.T, file string, classify func(*http.Request) (enforce.Call, bool)) func(method, path, ip string, header map[string]string, body string) (int, string) {
	t.Helper()
	r, _ := applyExample(t, file)
	resolver, err := clientip.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "")
	if err != nil {
		t.Fatal(err)
	}
	mw := httptest.NewServer(httpgate.Middleware(r.Env.Enforcer, classify, httpgate.MiddlewareOptions{ClientIPs: resolver, TeamHeader: "X-Auth-Team"})(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })))
	t.Cleanup(mw.Close)
	hc := &http.Client{Timeout: 30 * time.Second}
	// send returns the status and, for a 429, the definition that refused
	// the call (the RateLimit header's name).
	return func(method, path, ip string, header map[string]string, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, mw.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", ip)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		refused := ""
		if resp.StatusCode == http.StatusTooManyRequests {
			refused, _, _ = strings.Cut(strings.TrimPrefix(resp.Header.Get("RateLimit"), `"`), `"`)
		}
		return resp.StatusCode, refused
	}
}

// routeCaller is a gateway's classify for route limits: every request is a
// data-plane call of the user its authentication names, with no target.
func routeCaller(r *http.Request) (enforce.Call, bool) {
	return enforce.Call{Username: r.Header.Get("X-User")}, true
}

func TestExample004ThroughMiddleware(t *testing.T) {
	send := exampleMiddleware(t, "004-endpoint-tiers.yaml", routeCaller)
	as := func(user, team string) map[string]string {
		return map[string]string{"X-User": user, "X-Auth-Team": team}
	}
	const critical, high = "target:route:critical:60", "target:route:high:60"
	for i := range 10 {
		if got, by := send("POST", "/auth/email/login", "192.0.2.10", as("alice", ""), ""); got != http.StatusOK {
			t.Fatalf("alice's login %d: %d (refused by %q)", i+1, got, by)
		}
	}
	// Per team: HIGH is 30/min for acme-corp whoever and wherever its
	// members are; the 31st member from a fresh address is refused.
	for i := range 30 {
		if got, by := send("POST", "/oauth/token", fmt.Sprintf("10.1.0.%d", i+1), as(fmt.Sprintf("m%d", i), "acme-corp"), ""); got != http.StatusOK {
			t.Fatalf("acme-corp's call %d: %d (refused by %q)", i+1, got, by)
		}
	}
	for i, s := range []struct {
		method, path, ip, user, team string
		status                       int
		refusedBy                    string
	}{
		{"POST", "/auth/email/login", "192.0.2.10", "alice", "", http.StatusTooManyRequests, critical},
		{"POST", "/Auth/SSO/start?x=1", "192.0.2.10", "bob", "", http.StatusTooManyRequests, critical}, // the address is over
		{"POST", "/auth/sso/start", "192.0.2.11", "carol", "", http.StatusOK, ""},
		{"POST", "/oauth/token", "10.1.1.1", "new", "acme-corp", http.StatusTooManyRequests, high},
		{"POST", "/oauth/token", "10.1.1.2", "x", "globex", http.StatusOK, ""},
		{"POST", "/oauth/token", "10.1.1.3", "y", "", http.StatusOK, ""},
		{"GET", "/about", "192.0.2.10", "alice", "", http.StatusOK, ""}, // no tier
	} {
		if got, by := send(s.method, s.path, s.ip, as(s.user, s.team), ""); got != s.status || by != s.refusedBy {
			t.Errorf("step %d: %s %s as %s of team %q: %d refused by %q, want %d refused by %q", i+1, s.method, s.path, s.user, s.team, got, by, s.status, s.refusedBy)
		}
	}
}

func TestExample002ThroughMiddleware(t *testing.T) {
	send := exampleMiddleware(t, "002-per-ip-exempt-paths.yaml", routeCaller)
	const perIP = "target:route:per-ip:60"
	for i := range 60 {
		if got, by := send("GET", fmt.Sprintf("/page/%d", i), "203.0.113.50", map[string]string{"X-User": fmt.Sprintf("u%d", i%4)}, ""); got != http.StatusOK {
			t.Fatalf("call %d from 203.0.113.50: %d (refused by %q)", i+1, got, by)
		}
	}
	for i, s := range []struct {
		path, ip  string
		status    int
		refusedBy string
	}{
		{"/", "203.0.113.50", http.StatusTooManyRequests, perIP},
		{"/api/health", "203.0.113.50", http.StatusOK, ""}, // exempt, from an address over its limit
		{"/docs/index.html", "203.0.113.50", http.StatusOK, ""},
		{"/openapi.json", "203.0.113.50", http.StatusOK, ""},
		{"/", "203.0.113.51", http.StatusOK, ""},
	} {
		if got, by := send("GET", s.path, s.ip, nil, ""); got != s.status || by != s.refusedBy {
			t.Errorf("step %d: %s from %s: %d refused by %q, want %d refused by %q", i+1, s.path, s.ip, got, by, s.status, s.refusedBy)
		}
	}
	// An IPv6 /64 is one address.
	for i := range 60 {
		send("GET", "/x", fmt.Sprintf("2001:db8:9:9::%x", i+1), nil, "")
	}
	if got, by := send("GET", "/x", "2001:db8:9:9:ffff::1", nil, ""); got != http.StatusTooManyRequests || by != perIP {
		t.Errorf("a 61st address of one /64: %d refused by %q, want 429 by %s", got, by, perIP)
	}
	if got, _ := send("GET", "/x", "2001:db8:9:a::1", nil, ""); got != http.StatusOK {
		t.Errorf("the next /64: %d, want 200", got)
	}
}

// mcpCall is a Go gateway's classify for MCP: the server from the path
// (/<server>/mcp), the caller from X-User, and the tool and kind from the
// JSON-RPC body (tools/call and prompts/get name it in params.name,
// resources/read in params.uri, completion/complete in params.ref), the
// body put back for the handler.
func mcpCall(r *http.Request) (enforce.Call, bool) {
	server, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/mcp")
	if !ok {
		return enforce.Call{}, false
	}
	c := enforce.Call{Username: r.Header.Get("X-User"), TargetType: "mcp_server", TargetName: server}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body = io.NopCloser(bytes.NewReader(body))
	var rpc struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
			Ref  struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"ref"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &rpc) == nil {
		switch rpc.Method {
		case "tools/call":
			c.Tool, c.Kind = rpc.Params.Name, "tool"
		case "prompts/get":
			c.Tool, c.Kind = rpc.Params.Name, "prompt"
		case "resources/read":
			c.Tool, c.Kind = rpc.Params.URI, "resource"
		case "completion/complete":
			c.Tool, c.Kind = rpc.Params.Ref.Name+rpc.Params.Ref.URI, "completion"
		}
	}
	return c, true
}

func TestExample003ThroughMiddleware(t *testing.T) {
	send := exampleMiddleware(t, "003-tool-scopes.yaml", mcpCall)
	const (
		principal     = "target:mcp_tool:github:*:3600"
		principalTool = "target:mcp_tool:github:hot:3600"
		perTool       = "target:mcp_tool:*:delete_*:3600"
		completions   = "target:mcp_tool:github:*:60"
		repos         = "target:mcp_tool:github:file:///repos/*:3600"
	)
	step := 0
	want := func(user, server, body string, status int, refusedBy string) {
		t.Helper()
		step++
		if got, by := send("POST", "/"+server+"/mcp", "198.51.100.60", map[string]string{"X-User": user}, body); got != status || by != refusedBy {
			t.Errorf("step %d: %s on %s %s: %d refused by %q, want %d refused by %q", step, user, server, body, got, by, status, refusedBy)
		}
	}
	call := func(tool string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"}}`
	}
	want("alice", "github", call("hot"), http.StatusOK, "")
	for range 3 {
		want("alice", "github", call("hot"), http.StatusTooManyRequests, principalTool)
	}
	for range 4 {
		want("alice", "github", call("search"), http.StatusOK, "")
	}
	want("alice", "github", call("search"), http.StatusTooManyRequests, principal)
	want("alice", "github", `{"method":"prompts/get","params":{"name":"greet"}}`, http.StatusOK, "") // not a tool call
	complete := `{"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"assets"}}}`
	want("alice", "github", complete, http.StatusOK, "")
	want("alice", "github", complete, http.StatusTooManyRequests, completions)
	read := func(uri string) string { return `{"method":"resources/read","params":{"uri":"` + uri + `"}}` }
	want("alice", "github", read("file:///repos/a.md"), http.StatusOK, "")
	want("alice", "github", read("file:///repos/a.md"), http.StatusOK, "")
	want("alice", "github", read("file:///repos/a.md"), http.StatusTooManyRequests, repos)
	want("alice", "github", read("file:///repos/b.md"), http.StatusOK, "")
	for i := range 20 {
		want(fmt.Sprintf("u%d", i), "gitlab", call("delete_repo"), http.StatusOK, "")
	}
	want("zed", "gitlab", call("delete_repo"), http.StatusTooManyRequests, perTool)
	want("zed", "gitlab", call("delete_branch"), http.StatusOK, "")
}
