package api_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// applyExample applies an apply file of docs/examples/ as rlctl apply
// reads it.
// startExampleGateway starts an rlapi that trusts the loopback proxy, a
// backend counting the calls that reach it, and real nginx in front of
// both with docs/nginx/rlctl.conf (edited by edit, if not nil): what every
// example test behind nginx runs against.
func startExampleGateway(t *testing.T, edit func(conf string) string) (env *apitest.Env, admin *client.Client, gw string, reached *atomic.Int64) {
	t.Helper()
	bin := nginxBinary(t)
	const secret = "nginx-test-secret-examples"
	env = apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.1/32"), GatewaySecret: secret})
	admin = clientFor(t, env, env.AdminToken)
	reached = new(atomic.Int64)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(backend.Close)
	if edit == nil {
		return env, admin, startNginx(t, bin, env.URL, backend.URL, secret), reached
	}
	return env, admin, startNginxEdited(t, bin, env.URL, backend.URL, secret, edit), reached
}

func applyExample(t *testing.T, admin *client.Client, file string) {
	t.Helper()
	data, err := os.ReadFile("../../docs/examples/" + file)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range applydoc.DecodeFile(data, applydoc.Sniff(data), applydoc.Options{}) {
		if p.Err != nil || len(p.Problems) > 0 {
			t.Fatalf("%s: %v %v", file, p.Err, p.Problems)
		}
		if _, err := admin.Apply(t.Context(), client.State{Definitions: p.Doc.Definitions, Memberships: p.Doc.Memberships}, client.ApplyOptions{}); err != nil {
			t.Fatalf("apply %s: %v", file, err)
		}
	}
}

// Behind real nginx: the per-IP limit of docs/examples/seed-002-per-ip.yaml counts every call from one
// client address, whoever makes it (the 61st is a 429), and not another
// address's; a team named by X-Auth-Team shares its per-team bucket.
func TestNginxExampleSeed002AndTeams(t *testing.T) {
	t.Parallel()
	env, admin, gw, _ := startExampleGateway(t, nil)

	from := func(local, user, team string) int {
		t.Helper()
		return nginxCall(t, gw, local, user, team)
	}

	awayFromWindowEdge(t, 120)
	awayFromWindowEdge(t, 60) // the example's window
	applyExample(t, admin, "seed-002-per-ip.yaml")
	tenants := group("tenants", 120, 2, 2)
	tenants.Per = ratelimit.PerTeam
	define(t, env, admin, tenants)
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: ratelimit.SubjectTeam, Subject: "acme",
		Groups: []string{"tenants"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, env)

	allowed := 0
	for i := range 60 {
		if from("127.0.0.21", []string{"alice", "bob", ""}[i%3], "") == http.StatusOK {
			allowed++
		}
	}
	if allowed != 60 {
		t.Fatalf("60 calls from 127.0.0.21: %d allowed", allowed)
	}
	if got := from("127.0.0.21", "carol", ""); got != http.StatusTooManyRequests {
		t.Errorf("the 61st call from 127.0.0.21: %d, want 429", got)
	}
	if got := from("127.0.0.22", "carol", ""); got != http.StatusOK {
		t.Errorf("carol from another address: %d, want 200", got)
	}
	// Team acme's 2 per 120 s, whoever of the team calls.
	for i, s := range []struct {
		user, team string
		status     int
	}{
		{"dave", "acme", http.StatusOK},
		{"erin", "acme", http.StatusOK},
		{"frank", "acme", http.StatusTooManyRequests},
		{"frank", "", http.StatusOK},
		{"frank", "globex", http.StatusOK},
	} {
		if got := from("127.0.0.23", s.user, s.team); got != s.status {
			t.Errorf("team step %d: %s of team %q: %d, want %d", i+1, s.user, s.team, got, s.status)
		}
	}
}

// nginxCall sends a call to the MCP server srv through the nginx at gw
// from the loopback address local, as user (none: anonymous) of team
// (none: no team), and returns the status.
func nginxCall(t *testing.T, gw, local, user, team string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, gw+"/srv/mcp", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set("X-Auth-Username", user)
	}
	if team != "" {
		req.Header.Set("X-Auth-Team", team)
	}
	status, _ := gatewayDo(t, local, req)
	return status
}

// gatewayDo sends req from the loopback address local (none: any) and
// returns the status and, for a 429, the definition that refused it (the
// RateLimit header's name).
func gatewayDo(t *testing.T, local string, req *http.Request) (status int, refused string) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	if local != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
		tr.DialContext = d.DialContext
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("%s %s from %q: %v", req.Method, req.URL, local, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		refused, _, _ = strings.Cut(strings.TrimPrefix(resp.Header.Get("RateLimit"), `"`), `"`)
	}
	return resp.StatusCode, refused
}

// Behind real nginx: anonymous callers (docs/examples/seed-001-anonymous-by-ip.yaml) are keyed by the client
// address nginx saw: one address's anonymous calls share its 30, another
// address has its own, and a user calling from the spent address keeps
// her own bucket. (IPv6 /64 sharing behind nginx is
// TestNginxExampleSeed001IPv6Prefix, with a trusted balancer naming the
// client: the loopback has one IPv6 address.)
func TestNginxExampleSeed001(t *testing.T) {
	t.Parallel()
	env, admin, gw, _ := startExampleGateway(t, nil)
	awayFromWindowEdge(t, 60)
	applyExample(t, admin, "seed-001-anonymous-by-ip.yaml")
	refresh(t, env)
	allowed := 0
	for range 30 {
		if nginxCall(t, gw, "127.0.0.31", "", "") == http.StatusOK {
			allowed++
		}
	}
	if allowed != 30 {
		t.Fatalf("30 anonymous calls from 127.0.0.31: %d allowed", allowed)
	}
	for _, s := range []struct {
		local, user string
		status      int
	}{
		{"127.0.0.31", "", http.StatusTooManyRequests}, // the address's 31st
		{"127.0.0.32", "", http.StatusOK},              // another address: its own bucket
		{"127.0.0.31", "alice", http.StatusOK},         // a principal never borrows the anonymous bucket
	} {
		if got := nginxCall(t, gw, s.local, s.user, ""); got != s.status {
			t.Errorf("%q from %s: %d, want %d", s.user, s.local, got, s.status)
		}
	}
}

// withToolHeaders adds to the rendered docs/nginx/rlctl.conf what
// docs/nginx.md ("Tools and kinds") tells a gateway that can read the MCP
// body to add: X-Tool-Name and X-Tool-Kind on the /api/validate
// subrequest, from $mcp_tool and $mcp_kind. docs/nginx.md sets those with
// njs (js_set reading params.name and the method of the JSON-RPC body);
// Debian's nginx has no njs, so here two maps stand in for js_set,
// reading what the body parser would have found from the test client's
// X-Mcp-Tool and X-Mcp-Kind.
func withToolHeaders(t *testing.T) func(string) string {
	return func(conf string) string {
		conf = "map $http_x_mcp_tool $mcp_tool { default $http_x_mcp_tool; }\n" +
			"map $http_x_mcp_kind $mcp_kind { default $http_x_mcp_kind; }\n" + conf
		const at = "        proxy_set_header X-Original-Method $request_method;\n"
		return replaceOnce(t, conf, at, at+
			"        proxy_set_header X-Tool-Name       $mcp_tool;\n"+
			"        proxy_set_header X-Tool-Kind       $mcp_kind;\n")
	}
}

// nginxToolCall sends a JSON-RPC call of the MCP server server through the
// nginx at gw as user, naming tool (none: a gateway that cannot see it)
// and kind (none: tool), and returns the status and, for a 429, the
// definition that refused it (the RateLimit header's name).
func nginxToolCall(t *testing.T, gw, user, server, tool, kind string) (int, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `"}}`
	req, err := http.NewRequest(http.MethodPost, gw+"/"+server+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Username", user)
	if tool != "" {
		req.Header.Set("X-Mcp-Tool", tool)
	}
	if kind != "" {
		req.Header.Set("X-Mcp-Kind", kind)
	}
	return gatewayDo(t, "", req)
}

// Behind real nginx, with the tool and kind headers docs/nginx.md has a
// gateway set: the four tool scopes (docs/examples/003-tool-scopes.yaml)
// each refuse what the example's comments say they refuse, a call refused by one
// bucket costs nothing in the others, kinds select the definitions that
// apply, a resource is limited by its URI, and without the tool header
// the tool limits do not apply.
func TestNginxExampleSeed003(t *testing.T) {
	t.Parallel()
	env, admin, gw, reached := startExampleGateway(t, withToolHeaders(t))
	awayFromWindowEdge(t, 3600)
	awayFromWindowEdge(t, 60) // the completions-only limit's window
	applyExample(t, admin, "003-tool-scopes.yaml")
	refresh(t, env)

	allowed := 0 // calls that named a tool and passed: the global scope's count
	step := 0
	want := func(user, server, tool, kind string, status int, refusedBy string) {
		t.Helper()
		step++
		got, by := nginxToolCall(t, gw, user, server, tool, kind)
		if got != status || by != refusedBy {
			t.Errorf("step %d: %s's call of %s:%s (kind %q): %d refused by %q, want %d refused by %q", step, user, server, tool, kind, got, by, status, refusedBy)
		}
		if got == http.StatusOK && tool != "" {
			allowed++
		}
	}
	const (
		principal     = "target:mcp_tool:github:*:3600"
		principalTool = "target:mcp_tool:github:hot:3600"
		perTool       = "target:mcp_tool:*:delete_*:3600"
		completions   = "target:mcp_tool:github:*:60"
	)
	// principal_tool: one github:hot an hour per caller.
	want("alice", "github", "hot", "", http.StatusOK, "")
	for range 3 {
		want("alice", "github", "hot", "", http.StatusTooManyRequests, principalTool)
	}
	// principal: 5 github tools an hour per caller; the three refused hot
	// calls cost nothing, so four are left.
	for range 4 {
		want("alice", "github", "search", "", http.StatusOK, "")
	}
	want("alice", "github", "search", "", http.StatusTooManyRequests, principal)
	want("alice", "github", "search", "sampling", http.StatusTooManyRequests, principal) // an unknown kind is read as tool
	want("bob", "github", "search", "tool", http.StatusOK, "")                           // bob has his own bucket
	// kinds: the principal limit covers tools only; completions have
	// their own, one a minute.
	want("alice", "github", "greet", "prompt", http.StatusOK, "")
	want("alice", "github", "assets", "completion", http.StatusOK, "")
	want("alice", "github", "assets", "completion", http.StatusTooManyRequests, completions)
	// Resources by URI: 2 reads an hour per caller of each file under
	// file:///repos/ (principal_tool); reads are not tool calls, so
	// alice's spent principal limit does not refuse them.
	const repos = "target:mcp_tool:github:file:///repos/*:3600"
	want("alice", "github", "file:///repos/a.md", "resource", http.StatusOK, "")
	want("alice", "github", "file:///repos/a.md", "resource", http.StatusOK, "")
	want("alice", "github", "file:///repos/a.md", "resource", http.StatusTooManyRequests, repos)
	want("alice", "github", "file:///repos/b.md", "resource", http.StatusOK, "") // another resource, another bucket
	want("bob", "github", "file:///repos/a.md", "resource", http.StatusOK, "")   // another caller
	// A gateway that cannot see the tool: tool limits do not apply.
	want("alice", "github", "", "", http.StatusOK, "")
	// tool: 20 calls an hour per delete tool, whoever calls.
	for i := range 20 {
		want(fmt.Sprintf("u%d", i), "gitlab", "delete_repo", "", http.StatusOK, "")
	}
	want("zed", "gitlab", "delete_repo", "", http.StatusTooManyRequests, perTool)
	want("zed", "gitlab", "delete_branch", "", http.StatusOK, "") // another tool, another bucket
	// The backend saw every allowed call, the one without a tool too.
	if n := reached.Load(); n != int64(allowed)+1 {
		t.Errorf("the backend saw %d calls, want the %d allowed", n, allowed+1)
	}
	// global: 1000 an hour over every tool, counting each allowed call
	// that named a tool and none of the refused ones.
	gwc := clientFor(t, env, env.Token(t, "gateway", ratelimit.RoleEnforcer))
	res, err := gwc.Check(t.Context(), client.CheckRequest{Username: "zed", TargetType: "mcp_server", TargetName: "gitlab", Tool: "list"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range res.Gates {
		if g.DefinitionID == "target:mcp_tool:*:*:3600" {
			found = true
			if g.Dimension != "global" || g.Count != int64(allowed)+1 {
				t.Errorf("global gate %+v, want dimension global and count %d", g, allowed+1)
			}
		}
	}
	if !found {
		t.Errorf("no global gate in %+v", res.Gates)
	}
}

// nginxRouteCall sends method path through the nginx at gw from the
// loopback address local, as user of team (none: no team), and returns
// the status and, for a 429, the definition that refused it.
func nginxRouteCall(t *testing.T, gw, local, method, path, user, team string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, gw+path, strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Auth-Username", user)
	if team != "" {
		req.Header.Set("X-Auth-Team", team)
	}
	return gatewayDo(t, local, req)
}

// Behind real nginx: the team dimension of endpoint tiers (docs/examples/
// 004-endpoint-tiers.yaml), the team named by X-Auth-Team. HIGH is 30/min
// for team acme-corp as a whole: 30 members from 30 addresses pass, the
// 31st member from a fresh address (so neither her user nor her address
// bucket is spent) is refused by the HIGH tier, and another team and a
// call without a team pass. CRITICAL's team bucket is its own.
func TestNginxExampleSeed004PerTeam(t *testing.T) {
	t.Parallel()
	env, admin, gw, reached := startExampleGateway(t, nil)
	awayFromWindowEdge(t, 60)
	applyExample(t, admin, "004-endpoint-tiers.yaml")
	refresh(t, env)

	const high = "target:route:high:60"
	for i := range 30 {
		if got, by := nginxRouteCall(t, gw, fmt.Sprintf("127.0.4.%d", i+1), "POST", "/oauth/token",
			fmt.Sprintf("m%d@acme-corp.example", i), "acme-corp"); got != http.StatusOK {
			t.Fatalf("acme-corp's call %d on /oauth/token: %d (refused by %q), want 200", i+1, got, by)
		}
	}
	for i, s := range []struct {
		local, path, user, team string
		status                  int
		refusedBy               string
	}{
		{"127.0.4.100", "/oauth/token", "new@acme-corp.example", "acme-corp", http.StatusTooManyRequests, high},
		{"127.0.4.101", "/rbac/roles", "old@acme-corp.example", "acme-corp", http.StatusTooManyRequests, high}, // the tier, not the path
		{"127.0.4.102", "/oauth/token", "x@globex.example", "globex", http.StatusOK, ""},
		{"127.0.4.103", "/oauth/token", "y@example.com", "", http.StatusOK, ""},
		{"127.0.4.104", "/auth/email/login", "new@acme-corp.example", "acme-corp", http.StatusOK, ""}, // CRITICAL is another bucket
	} {
		if got, by := nginxRouteCall(t, gw, s.local, "POST", s.path, s.user, s.team); got != s.status || by != s.refusedBy {
			t.Errorf("step %d: %s on %s of team %q: %d refused by %q, want %d refused by %q", i+1, s.user, s.path, s.team, got, by, s.status, s.refusedBy)
		}
	}
	if n := reached.Load(); n != 33 {
		t.Errorf("the backend saw %d calls, want the 33 allowed", n)
	}
}

// Behind real nginx: docs/examples/002-per-ip-exempt-paths.yaml's 60
// calls a minute per client address on every path, whoever calls, with
// the public paths exempt even for an address over its limit.
func TestNginxExample002ExemptPaths(t *testing.T) {
	t.Parallel()
	env, admin, gw, _ := startExampleGateway(t, nil)
	awayFromWindowEdge(t, 60)
	applyExample(t, admin, "002-per-ip-exempt-paths.yaml")
	refresh(t, env)
	const perIP = "target:route:per-ip:60"
	for i := range 60 {
		if got, by := nginxRouteCall(t, gw, "127.0.5.1", "GET", fmt.Sprintf("/page/%d", i), []string{"alice", "bob", ""}[i%3], ""); got != http.StatusOK {
			t.Fatalf("call %d from 127.0.5.1: %d (refused by %q)", i+1, got, by)
		}
	}
	for i, s := range []struct {
		local, path string
		status      int
		refusedBy   string
	}{
		{"127.0.5.1", "/", http.StatusTooManyRequests, perIP},
		{"127.0.5.1", "/srv/mcp", http.StatusTooManyRequests, perIP}, // a server's path too
		{"127.0.5.1", "/docs/index.html", http.StatusOK, ""},         // exempt
		{"127.0.5.1", "/openapi.json", http.StatusOK, ""},
		{"127.0.5.1", "/redoc", http.StatusOK, ""},
		{"127.0.5.2", "/", http.StatusOK, ""}, // another address
	} {
		if got, by := nginxRouteCall(t, gw, s.local, "GET", s.path, "carol", ""); got != s.status || by != s.refusedBy {
			t.Errorf("step %d: %s from %s: %d refused by %q, want %d refused by %q", i+1, s.path, s.local, got, by, s.status, s.refusedBy)
		}
	}
}

// Behind real nginx with a trusted load balancer in front of it: seed
// 001's anonymous callers are keyed by their IPv6 /64. The test client
// stands for the balancer (it calls from 127.0.0.1, the trusted proxy) and
// names the client in X-Forwarded-For; nginx appends the balancer's
// address, and rlapi takes the right-most untrusted hop. Two addresses of
// one /64 share its 30; another /64 has its own.
func TestNginxExampleSeed001IPv6Prefix(t *testing.T) {
	t.Parallel()
	env, admin, gw, _ := startExampleGateway(t, nil)
	awayFromWindowEdge(t, 60)
	applyExample(t, admin, "seed-001-anonymous-by-ip.yaml")
	refresh(t, env)
	from := func(client string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gw+"/srv/mcp", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Forwarded-For", client)
		status, _ := gatewayDo(t, "127.0.0.1", req)
		return status
	}
	allowed := 0
	for i := range 30 {
		// Fifteen calls each from two addresses of 2001:db8:1:2::/64.
		if from(fmt.Sprintf("2001:db8:1:2::%x", 10+i%2)) == http.StatusOK {
			allowed++
		}
	}
	if allowed != 30 {
		t.Fatalf("30 anonymous calls from 2001:db8:1:2::/64: %d allowed", allowed)
	}
	for _, s := range []struct {
		client string
		status int
	}{
		{"2001:db8:1:2::ffff", http.StatusTooManyRequests}, // a third address of the spent /64
		{"2001:db8:1:3::a", http.StatusOK},                 // the next /64: its own bucket
		{"203.0.113.9", http.StatusOK},                     // an IPv4 client: its own
	} {
		if got := from(s.client); got != s.status {
			t.Errorf("anonymous call for %s: %d, want %d", s.client, got, s.status)
		}
	}
}
