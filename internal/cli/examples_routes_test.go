package cli_test

// docs/examples/: each apply file is applied to a real rlapi
// with rlctl apply, then driven through POST /api/check, asserting what
// its reference design says: which call is refused, by which dimension.

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
)

// applyExample applies a docs/examples file and returns a client with an
// enforcer token, once the enforcer has the new definitions.
func applyExample(t *testing.T, file string) (*clitest.Rlctl, *client.Client) {
	t.Helper()
	r := clitest.StartParallel(t)
	r.Must("apply", "-f", "../../docs/examples/"+file)
	if err := r.Env.Enforcer.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Far from the edge of the minute and of the hour (the examples'
	// windows): a window turning mid-test would refill its buckets.
	for _, w := range []int64{60, 3600} {
		if left := w - time.Now().Unix()%w; left <= 15 {
			time.Sleep(time.Duration(left)*time.Second + 100*time.Millisecond)
		}
	}
	return r, r.ClientAs(r.Env.Token(t, "gateway", "enforcer"))
}

func mustCheck(t *testing.T, gw *client.Client, req client.CheckRequest) client.CheckResult {
	t.Helper()
	res, err := gw.Check(t.Context(), req)
	if err != nil {
		t.Fatalf("check %+v: %v", req, err)
	}
	return res
}

// refusedBy lists "<definition id> <dimension>" of the gates a refused
// call had no room on.
func refusedBy(res client.CheckResult) []string {
	var out []string
	for _, g := range res.Gates {
		if g.Remaining == 0 && !res.Allowed {
			out = append(out, g.DefinitionID+" "+g.Dimension)
		}
	}
	return out
}

func TestExample004EndpointTiers(t *testing.T) {
	_, gw := applyExample(t, "004-endpoint-tiers.yaml")
	login := func(user, ip string) client.CheckRequest {
		return client.CheckRequest{Username: user, ClientIP: ip, Method: "POST", Path: "/auth/email/login"}
	}
	// CRITICAL: 10/min per address and per user, no burst.
	for i := range 10 {
		if res := mustCheck(t, gw, login("alice", "192.168.1.100")); !res.Allowed {
			t.Fatalf("alice's login %d: %+v", i+1, res)
		}
	}
	res := mustCheck(t, gw, login("alice", "192.168.1.100"))
	if fmt.Sprint(refusedBy(res)) != "[target:route:critical:60 ip target:route:critical:60 user]" {
		t.Errorf("alice's 11th login: refused by %v (%+v), want both dimensions", refusedBy(res), res)
	}
	// bob from the same address: the address is over, bob is not.
	if res := mustCheck(t, gw, login("bob", "192.168.1.100")); fmt.Sprint(refusedBy(res)) != "[target:route:critical:60 ip]" {
		t.Errorf("bob from alice's address: refused by %v, want the ip dimension", refusedBy(res))
	}
	// alice from another address: she is over, the address is not.
	if res := mustCheck(t, gw, login("alice", "192.168.1.101")); fmt.Sprint(refusedBy(res)) != "[target:route:critical:60 user]" {
		t.Errorf("alice from another address: refused by %v, want the user dimension", refusedBy(res))
	}
	// Another tier is another bucket: HIGH is untouched.
	if res := mustCheck(t, gw, client.CheckRequest{Username: "alice", ClientIP: "192.168.1.100", Method: "POST", Path: "/tokens/new"}); !res.Allowed ||
		len(res.Gates) != 2 || res.Gates[0].Matched != "/tokens/*" {
		t.Errorf("alice on /tokens/new: %+v", res)
	}
	// MEDIUM: 100/min with 20 of burst allowance: a full bucket admits 120
	// at once; the bucket refills as time passes (100 a minute), so the
	// refusal comes at the 121st call or a little later, never earlier,
	// and is the medium tier's per-address bucket.
	tools := client.CheckRequest{ClientIP: "198.51.100.9", Method: "GET", Path: "/tools/list"}
	for i := range 120 {
		if res := mustCheck(t, gw, tools); !res.Allowed {
			t.Fatalf("an anonymous caller's call %d on /tools/list: %+v, want the 120 of a full bucket allowed", i+1, res)
		}
	}
	for i := 0; ; i++ {
		res := mustCheck(t, gw, tools)
		if !res.Allowed {
			if fmt.Sprint(refusedBy(res)) != "[target:route:medium:60 ip]" {
				t.Errorf("refused by %v, want the medium tier per ip", refusedBy(res))
			}
			break
		}
		if i == 100 { // bounds a hang only: refill is 100 a minute
			t.Fatal("never refused past the bucket")
		}
	}
	// Per team: HIGH is 30/min for acme-corp as a whole. 30 calls by 30
	// users from 30 addresses pass; the 31st member, from a fresh address,
	// is refused by the team dimension alone. Another team, and a call
	// with no team, are not.
	oauth := func(user, team, ip string) client.CheckRequest {
		return client.CheckRequest{Username: user, Team: team, ClientIP: ip, Method: "POST", Path: "/oauth/token"}
	}
	for i := range 30 {
		if res := mustCheck(t, gw, oauth(fmt.Sprintf("m%d@acme-corp.example", i), "acme-corp", fmt.Sprintf("10.0.0.%d", i+1))); !res.Allowed {
			t.Fatalf("acme-corp's call %d on /oauth/token: %+v", i+1, res)
		}
	}
	if res := mustCheck(t, gw, oauth("new@acme-corp.example", "acme-corp", "10.0.1.1")); fmt.Sprint(refusedBy(res)) != "[target:route:high:60 team]" {
		t.Errorf("acme-corp's 31st call: refused by %v (%+v), want the team dimension", refusedBy(res), res)
	}
	if res := mustCheck(t, gw, oauth("x@globex.example", "globex", "10.0.1.2")); !res.Allowed {
		t.Errorf("another team on /oauth/token: %+v", res)
	}
	if res := mustCheck(t, gw, oauth("y@example.com", "", "10.0.1.3")); !res.Allowed || len(res.Gates) != 2 {
		t.Errorf("a call without a team on /oauth/token: %+v, want allowed by the ip and user gates only", res)
	}
	// A path no tier names is not limited.
	if res := mustCheck(t, gw, client.CheckRequest{Username: "alice", ClientIP: "192.168.1.100", Method: "GET", Path: "/about"}); !res.Allowed || len(res.Gates) != 0 {
		t.Errorf("/about: %+v, want allowed, no gate", res)
	}
}

func TestExample002PerIPWithExemptPaths(t *testing.T) {
	_, gw := applyExample(t, "002-per-ip-exempt-paths.yaml")
	call := func(ip, path string) client.CheckRequest {
		return client.CheckRequest{Username: "u" + ip, ClientIP: ip, Method: "GET", Path: path}
	}
	for i := range 60 {
		if res := mustCheck(t, gw, call("203.0.113.7", fmt.Sprintf("/page/%d", i))); !res.Allowed {
			t.Fatalf("call %d: %+v", i+1, res)
		}
	}
	if res := mustCheck(t, gw, call("203.0.113.7", "/")); fmt.Sprint(refusedBy(res)) != "[target:route:per-ip:60 ip]" {
		t.Errorf("61st call from one address: %v (%+v), want refused per ip", refusedBy(res), res)
	}
	for _, p := range []string{"/api/health", "/docs", "/docs/index.html", "/openapi.json", "/redoc"} {
		if res := mustCheck(t, gw, call("203.0.113.7", p)); !res.Allowed || len(res.Gates) != 0 {
			t.Errorf("exempt %s from an address over its limit: %+v", p, res)
		}
	}
	// The same /64 is one address; another /64 is not.
	for i := range 60 {
		mustCheck(t, gw, call(fmt.Sprintf("2001:db8:1:2::%x", i+1), "/x"))
	}
	if res := mustCheck(t, gw, call("2001:db8:1:2:ffff::1", "/x")); res.Allowed {
		t.Errorf("a 61st address of one /64: %+v, want refused (the /64 is one client)", res)
	}
	if res := mustCheck(t, gw, call("2001:db8:1:3::1", "/x")); !res.Allowed {
		t.Errorf("the next /64: %+v", res)
	}
}

func TestExample003ToolScopes(t *testing.T) {
	_, gw := applyExample(t, "003-tool-scopes.yaml")
	tool := func(user, server, name, kind string) client.CheckRequest {
		return client.CheckRequest{Username: user, TargetType: "mcp_server", TargetName: server, Tool: name, Kind: kind}
	}
	if res := mustCheck(t, gw, tool("alice", "github", "hot", "")); !res.Allowed {
		t.Fatalf("first hot call: %+v", res)
	}
	for range 3 {
		if res := mustCheck(t, gw, tool("alice", "github", "hot", "")); fmt.Sprint(refusedBy(res)) != "[target:mcp_tool:github:hot:3600 principal_tool]" {
			t.Fatalf("hot again: refused by %v (%+v), want github:hot's principal_tool bucket", refusedBy(res), res)
		}
	}
	allowed := 0
	for range 6 {
		if mustCheck(t, gw, tool("alice", "github", "search", "")).Allowed {
			allowed++
		}
	}
	if allowed != 4 {
		t.Errorf("alice's other tools after one hot call and three refused: %d allowed, want 4", allowed)
	}
	if res := mustCheck(t, gw, tool("alice", "github", "search", "")); fmt.Sprint(refusedBy(res)) != "[target:mcp_tool:github:*:3600 principal]" {
		t.Errorf("alice over her principal limit: refused by %v", refusedBy(res))
	}
	// Completions are limited by their own definition (kinds: [completion]),
	// and not by the tool-only principal limit alice used up.
	if res := mustCheck(t, gw, tool("alice", "github", "assets", "completion")); !res.Allowed {
		t.Errorf("alice's first completion: %+v", res)
	}
	if res := mustCheck(t, gw, tool("alice", "github", "assets", "completion")); fmt.Sprint(refusedBy(res)) != "[target:mcp_tool:github:*:60 principal]" {
		t.Errorf("alice's second completion: refused by %v", refusedBy(res))
	}
	// *:delete_* per tool: callers share a tool's bucket.
	for i := range 20 {
		if res := mustCheck(t, gw, tool(fmt.Sprintf("u%d", i), "gitlab", "delete_repo", "")); !res.Allowed {
			t.Fatalf("delete %d: %+v", i+1, res)
		}
	}
	if res := mustCheck(t, gw, tool("zed", "gitlab", "delete_repo", "")); fmt.Sprint(refusedBy(res)) != "[target:mcp_tool:*:delete_*:3600 tool]" {
		t.Errorf("21st gitlab:delete_repo: refused by %v", refusedBy(res))
	}
	if res := mustCheck(t, gw, tool("zed", "gitlab", "delete_branch", "")); !res.Allowed {
		t.Errorf("gitlab:delete_branch has its own bucket: %+v", res)
	}
	// The global limit counted every allowed call it matched and none of
	// the refused ones: 1 hot, 4 search, 1 completion, 20 delete_repo, 1
	// delete_branch and this one.
	res := mustCheck(t, gw, tool("zed", "gitlab", "list", ""))
	for _, g := range res.Gates {
		if g.DefinitionID == "target:mcp_tool:*:*:3600" && (g.Dimension != "global" || g.Count != 28) {
			t.Errorf("global gate %+v", g)
		}
	}
	// Resources are named by URI (kinds [resource]): two reads an hour per
	// caller of each file under file:///repos/.
	for range 2 {
		if res := mustCheck(t, gw, tool("carol", "github", "file:///repos/a.md", "resource")); !res.Allowed {
			t.Fatalf("carol's read of file:///repos/a.md: %+v", res)
		}
	}
	if res := mustCheck(t, gw, tool("carol", "github", "file:///repos/a.md", "resource")); fmt.Sprint(refusedBy(res)) != "[target:mcp_tool:github:file:///repos/*:3600 principal_tool]" {
		t.Errorf("carol's third read: refused by %v (%+v)", refusedBy(res), res)
	}
	if res := mustCheck(t, gw, tool("carol", "github", "file:///repos/b.md", "resource")); !res.Allowed {
		t.Errorf("carol's read of another file: %+v", res)
	}
}

// An apply file with one route that can never match is refused whole,
// naming the field, and stores nothing; diff of an applied example finds
// no change.
func TestApplyRefusesABadRouteWhole(t *testing.T) {
	r := clitest.StartParallel(t)
	dir := t.TempDir()
	file := dir + "/bad.yaml"
	if err := os.WriteFile(file, []byte(`definitions:
  - {axis: target, entity_type: route, name: good, window_seconds: 60, paths: [/ok/*], ip_max_requests: 5}
  - {axis: target, entity_type: route, name: bad, window_seconds: 60, paths: [/auth/], methods: [FETCH], user_max_requests: 5}
  - {axis: target, entity_type: mcp_tool, name: "srv:*", window_seconds: 60, max_requests: 5, kinds: [sampling]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	res := r.Run("apply", "-f", file)
	for _, want := range []string{"paths[0]", "methods[0]", "kinds[0]"} {
		if res.Code == 0 || !strings.Contains(res.ErrOut, want) {
			t.Errorf("apply of a bad route: exit %d, stderr lacks %s:\n%s", res.Code, want, res.ErrOut)
		}
	}
	if out := r.Must("rate-limit", "list", "--axis", "target"); strings.Contains(out, "good") {
		t.Errorf("a refused apply stored a definition:\n%s", out)
	}
	r.Must("apply", "-f", "../../docs/examples/004-endpoint-tiers.yaml")
	if res := r.Run("diff", "-f", "../../docs/examples/004-endpoint-tiers.yaml"); res.Code != 0 || strings.Contains(res.Out, "configured") {
		t.Errorf("diff after apply: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	exported := r.Must("export")
	for _, want := range []string{"paths:", "- /auth/email/*", "ip_max_requests: 10", "ip_burst: 120"} {
		if !strings.Contains(exported, want) {
			t.Errorf("export lacks %q:\n%s", want, exported)
		}
	}
}
