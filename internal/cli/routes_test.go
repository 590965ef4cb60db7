package cli_test

// rlctl's surface of routes, tool globs and kinds: rate-limit
// set's flags and completion, the MATCH column, and status saying which
// pattern matched.

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

func TestRouteAndToolDefinitionsThroughTheCLI(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "route", "--name", "critical", "--window-seconds", "60",
		"--path", "/auth/email/*", "--path", "/Auth/SSO/*", "--method", "post", "--algorithm", "sliding_window",
		"--ip-max-requests", "10", "--user-max-requests", "10")
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "route", "--name", "public", "--window-seconds", "60",
		"--path", "/docs,/openapi.json", "--exempt")
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "mcp_tool", "--name", "*:delete_*", "--window-seconds", "60",
		"--max-requests", "5", "--tool-scope", "principal_tool", "--kind", "tool")

	wide := r.Must("rate-limit", "list", "--entity-type", "route", "-o", "wide")
	if !strings.Contains(wide, "POST /auth/email/*,/auth/sso/*") || !strings.Contains(wide, "ip=10") || !strings.Contains(wide, "exempt") {
		t.Errorf("list -o wide:\n%s", wide)
	}
	res := r.RunWith(clitest.Opts{}, "rate-limit", "status", "--path", "/AUTH/sso/start?x=1", "--method", "POST")
	if res.Code != 0 || !strings.Contains(res.Out, "target:route:critical:60") ||
		!strings.Contains(res.ErrOut, "matched: target:route:critical:60 by /auth/sso/*") {
		t.Errorf("status --path: exit %d\n%s\n%s", res.Code, res.Out, res.ErrOut)
	}
	res = r.RunWith(clitest.Opts{}, "rate-limit", "status", "--entity-type", "mcp_tool", "--name", "github:delete_repo")
	if res.Code != 0 || !strings.Contains(res.ErrOut, "matched: target:mcp_tool:*:delete_*:60 by *:delete_*") {
		t.Errorf("status of a tool: exit %d\n%s\n%s", res.Code, res.Out, res.ErrOut)
	}
	// A pattern that can never match, a bad method, an unknown kind: refused naming the field, nothing stored.
	res = r.RunWith(clitest.Opts{}, "rate-limit", "set", "--axis", "target", "--entity-type", "route", "--name", "bad", "--window-seconds", "60",
		"--path", "/auth/", "--method", "FETCH", "--user-max-requests", "1")
	if res.Code != 2 || !strings.Contains(res.ErrOut, "--path[0]: can never match") || !strings.Contains(res.ErrOut, "--method[0]: must be one of") {
		t.Errorf("bad route: exit %d\n%s", res.Code, res.ErrOut)
	}
	if out := r.Must("rate-limit", "list", "--entity-type", "route"); strings.Contains(out, "bad") {
		t.Errorf("a refused route was stored:\n%s", out)
	}
	if out := r.Must("__complete", "rate-limit", "set", "--tool-scope", ""); !strings.HasPrefix(out, "global\ntool\nprincipal\nprincipal_tool\n") {
		t.Errorf("completion of --tool-scope:\n%s", out)
	}
	if out := r.Must("__complete", "rate-limit", "set", "--kind", ""); !strings.HasPrefix(out, "tool\nprompt\nresource\ncompletion\n") {
		t.Errorf("completion of --kind:\n%s", out)
	}
}

// --team-max-requests and --team-burst give a tier a bucket per team: the
// wide list shows team= beside the other dimensions, export writes the
// fields, and a burst without a token bucket is refused naming team_burst.
func TestRouteTeamFlagsThroughTheCLI(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "route", "--name", "medium", "--window-seconds", "60",
		"--path", "/tools/*", "--algorithm", "token_bucket", "--user-max-requests", "100",
		"--team-max-requests", "100", "--team-burst", "120")
	wide := r.Must("rate-limit", "list", "--entity-type", "route", "-o", "wide")
	if !strings.Contains(wide, "user=100 team=100") || !strings.Contains(wide, "user=100 team=120") {
		t.Errorf("list -o wide:\n%s", wide)
	}
	if out := r.Must("export"); !strings.Contains(out, "team_max_requests: 100") || !strings.Contains(out, "team_burst: 120") {
		t.Errorf("export:\n%s", out)
	}
	res := r.RunWith(clitest.Opts{}, "rate-limit", "set", "--axis", "target", "--entity-type", "route", "--name", "bad", "--window-seconds", "60",
		"--path", "/x/*", "--team-max-requests", "5", "--team-burst", "6")
	if res.Code == 0 || !strings.Contains(res.ErrOut, "team_burst") {
		t.Errorf("team burst on a fixed window: exit %d\n%s", res.Code, res.ErrOut)
	}
}
