package api_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Reference 003's kind resource names resources by URI: an mcp_tool
// definition of kinds [resource] stores a URI or a glob over URIs, is read
// back by id, and limits the calls that carry the URI, tool on
// POST /api/check and X-Tool-Name on /api/validate, of kind resource. The
// same URI on a definition of other kinds is a 400 naming name, and
// nothing is stored.
func TestResourceURIDefinitions(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	docs := targetLimit("mcp_tool", "srv:file:///docs/*", 60, 1)
	docs.Kinds = []string{"resource"}
	widget := targetLimit("mcp_tool", "srv:ui://widget/chart", 60, 1)
	widget.Kinds, widget.ToolScope = []string{"resource"}, "principal"
	define(t, env, admin, docs, widget)
	got, err := admin.GetDefinition(t.Context(), "target:mcp_tool:srv:file:///docs/*:60")
	if err != nil || got.Name != "srv:file:///docs/*" || len(got.Kinds) != 1 {
		t.Fatalf("read back by id: %+v, %v", got, err)
	}

	bad := targetLimit("mcp_tool", "srv:file:///etc/*", 60, 1)
	bad.Kinds = []string{"tool"}
	_, err = admin.PutDefinition(t.Context(), bad, client.WriteOptions{})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || len(ae.Errors) != 1 || ae.Errors[0].Field != "name" {
		t.Errorf("a URI on a tool-kind definition: %v, want a 400 naming name", err)
	}
	if _, err := admin.GetDefinition(t.Context(), "target:mcp_tool:srv:file:///etc/*:60"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused definition: %v, want not found", err)
	}

	gw := env.Token(t, "gateway", "enforcer")
	check := func(user, tool, kind string) checkResult {
		t.Helper()
		body := `{"username":"` + user + `","target_type":"mcp_server","target_name":"srv","tool":"` + tool + `","kind":"` + kind + `"}`
		return decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: body}))
	}
	for i, s := range []struct {
		user, tool, kind string
		allowed          bool
	}{
		{"alice", "file:///docs/a.md", "resource", true},
		{"bob", "file:///docs/b.md", "resource", false}, // the glob's one bucket
		{"bob", "file:///docs/b.md", "tool", true},      // kinds [resource]: a tool call is not limited
		{"bob", "file:///etc/hosts", "resource", true},  // no definition matches
		{"alice", "ui://widget/chart", "resource", true},
		{"alice", "ui://widget/chart", "resource", false}, // alice's own bucket
	} {
		if r := check(s.user, s.tool, s.kind); r.Allowed != s.allowed {
			t.Errorf("check step %d: %s reads %s (%s): %+v, want allowed %v", i+1, s.user, s.tool, s.kind, r, s.allowed)
		}
	}
	// /api/validate takes the URI from X-Tool-Name: bob's own bucket of
	// the widget is still full, alice's is spent.
	for i, s := range []struct {
		user, tool string
		status     int
	}{
		{"bob", "ui://widget/chart", http.StatusOK},
		{"bob", "ui://widget/chart", http.StatusForbidden},
		{"alice", "ui://widget/chart", http.StatusForbidden},
	} {
		if a := validate(t, hc, env, "/srv/mcp", "X-Auth-Username", s.user, "X-Tool-Name", s.tool, "X-Tool-Kind", ratelimit.KindResource); a.status != s.status {
			t.Errorf("validate step %d: %s reads %s: %d %s, want %d", i+1, s.user, s.tool, a.status, a.body, s.status)
		}
	}
	// The buckets are listed by definition and by caller, URIs and all.
	if cs, err := countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Definition: "target:mcp_tool:srv:file:///docs/*:60"}, 0)); err != nil || len(cs) != 1 || cs[0].Count != 1 {
		t.Errorf("the glob's counter: %+v, %v", cs, err)
	}
	cs, err := countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Caller: "user:alice"}, 0))
	found := false
	for _, c := range cs {
		found = found || c.Key == counterkey.CallerTarget(60, "user:alice", "mcp_tool:srv:ui://widget/chart").String()
	}
	if err != nil || !found {
		t.Errorf("alice's counters %+v, %v: want her widget bucket", cs, err)
	}
}
