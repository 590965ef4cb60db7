package counters_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/counters"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestSelectorFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		want    client.CounterSelector
		wantErr string
	}{
		{[]string{"--caller", "user:alice"}, client.CounterSelector{Caller: "user:alice"}, ""},
		{[]string{"--target", "mcp_server:mcpgw"}, client.CounterSelector{Target: "mcp_server:mcpgw"}, ""},
		{[]string{"--definition", "target:mcp_server:mcpgw:60"}, client.CounterSelector{Definition: "target:mcp_server:mcpgw:60"}, ""},
		{nil, client.CounterSelector{}, "give one of --caller, --target or --definition"},
		{[]string{"--caller", "user:a", "--target", "mcp_server:b"}, client.CounterSelector{}, "give only one of --caller, --target or --definition (got --caller and --target)"},
		{[]string{"--caller", " "}, client.CounterSelector{}, "--caller must not be empty"},
		{[]string{"user:alice"}, client.CounterSelector{}, "unknown command"},
	}
	for _, tt := range tests {
		for _, verb := range []string{"get", "reset"} {
			t.Run(verb+" "+strings.Join(tt.args, " "), func(t *testing.T) {
				t.Parallel()
				f := clitest.Factory()
				var got client.CounterSelector
				cmd := counters.NewCmdGet(f, func(o *counters.GetOptions) error { got = o.Selector; return nil })
				if verb == "reset" {
					cmd = counters.NewCmdReset(f, func(o *counters.ResetOptions) error { got = o.Selector; return nil })
				}
				err := clitest.Execute(f, cmd, tt.args...)
				switch {
				case tt.wantErr == "" && err != nil:
					t.Fatalf("err = %v", err)
				case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				case tt.wantErr != "" && cmdutil.ExitCode(err) != cmdutil.ExitUsage:
					t.Errorf("exit code %d, want %d (usage)", cmdutil.ExitCode(err), cmdutil.ExitUsage)
				case got != tt.want:
					t.Errorf("selector = %+v, want %+v", got, tt.want)
				}
			})
		}
	}
}

// start serves rlapi, in parallel with the other tests, and lets alice
// make 3 calls and al 1 to mcpgw, under a caller group limit and a target
// limit.
func start(t *testing.T) *clitest.Rlctl {
	t.Helper()
	h := clitest.StartParallel(t)
	ctx := context.Background()
	c := h.Client()
	limit, target := 100, 500
	for _, d := range []rl.Definition{
		{Axis: "caller", EntityType: "group", Name: "developers", WindowSeconds: 60, UserMaxRequests: &limit, Enabled: true},
		{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: &target, Enabled: true},
	} {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []string{"alice", "al"} {
		if _, err := c.PutMembership(ctx, rl.Membership{SubjectType: "user", Subject: u, Groups: []string{"developers"}}, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "alice", "alice", "al"} {
		if d, err := h.Env.Enforcer.Check(ctx, enforce.Call{Username: u, TargetType: "mcp_server", TargetName: "mcpgw"}); err != nil || !d.Allowed {
			t.Fatalf("check %s = %+v, %v", u, d, err)
		}
	}
	return h
}

// counts reads a subject's counters through `counters get -o json`, summed
// per key (a run across a window boundary splits a key over two windows).
func counts(h *clitest.Rlctl, flag, value string) map[string]int64 {
	h.T.Helper()
	var doc struct {
		Counters []client.Counter `json:"counters"`
	}
	if err := json.Unmarshal([]byte(h.Must("counters", "get", flag, value, "-o", "json")), &doc); err != nil {
		h.T.Fatal(err)
	}
	out := map[string]int64{}
	for _, c := range doc.Counters {
		out[c.Key] += c.Count
	}
	return out
}

func sameCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestGet(t *testing.T) {
	h := start(t)
	if got := counts(h, "--caller", "user:alice"); !sameCounts(got, map[string]int64{"c|60|user:alice": 3}) {
		t.Errorf("alice = %v", got)
	}
	if got := counts(h, "--target", "mcp_server:/mcpgw/"); !sameCounts(got, map[string]int64{"t|target:mcp_server:mcpgw:60": 4}) {
		t.Errorf("mcpgw = %v", got)
	}
	// A caller definition shows its members' buckets: the counts --caller
	// shows for each.
	if got := counts(h, "--definition", "caller:group:developers:60"); !sameCounts(got, map[string]int64{"c|60|user:alice": 3, "c|60|user:al": 1}) {
		t.Errorf("--definition caller:group:developers:60 = %v, want alice's 3 and al's 1", got)
	}

	// On a terminal: aligned, with a header.
	r := h.RunWith(clitest.Opts{TTY: true}, "counters", "get", "--definition", "target:mcp_server:mcpgw:60")
	lines := strings.Split(strings.TrimSpace(r.Out), "\n")
	if r.Code != 0 || len(lines) < 2 || strings.Join(strings.Fields(lines[0]), " ") != "KEY WINDOW WINDOW-START COUNT EXPIRES" ||
		!strings.HasPrefix(strings.Join(strings.Fields(lines[1]), " "), "t|target:mcp_server:mcpgw:60 60s 20") ||
		strings.Index(lines[0], "WINDOW ") != strings.Index(lines[1], "60s") {
		t.Errorf("table on a terminal: exit %d\n%q\n%q", r.Code, r.Out, r.ErrOut)
	}
	// Piped: tab-separated, under a header line.
	header, row, _ := strings.Cut(strings.TrimSpace(h.Must("counters", "get", "--caller", "user:al")), "\n")
	if header != "KEY\tWINDOW\tWINDOW-START\tCOUNT\tEXPIRES" {
		t.Errorf("piped header = %q", header)
	}
	piped := strings.Split(row, "\t")
	if len(piped) != 5 || piped[0] != "c|60|user:al" || piped[1] != "60s" || piped[3] != "1" {
		t.Errorf("piped row = %q", piped)
	}
	// Wide adds the definition and the window index.
	if out := h.Must("counters", "get", "--target", "mcp_server:mcpgw", "-o", "wide"); len(strings.Split(strings.Split(out, "\n")[0], "\t")) != 7 ||
		!strings.Contains(out, "\ttarget:mcp_server:mcpgw:60\t") {
		t.Errorf("-o wide = %q", out)
	}
	if out := h.Must("counters", "get", "--caller", "user:alice", "-o", "yaml"); !strings.HasPrefix(out, "counters:\n- key: c|60|user:alice\n  window_index: ") || !strings.Contains(out, "\n  count: 3\n") {
		t.Errorf("-o yaml = %q", out)
	}
	if out := h.Must("counters", "get", "--caller", "user:alice", "-o", "name"); out != "counter/c|60|user:alice\n" {
		t.Errorf("-o name = %q", out)
	}

	// Nothing to show: said on stderr, stdout stays empty.
	r = h.RunWith(clitest.Opts{TTY: true}, "counters", "get", "--caller", "user:nobody")
	if r.Code != 0 || r.Out != "" || !strings.Contains(r.ErrOut, "No live counters for caller user:nobody") {
		t.Errorf("empty: exit %d, stdout %q, stderr %q", r.Code, r.Out, r.ErrOut)
	}
	if out := h.Must("counters", "get", "--caller", "user:nobody", "-o", "json"); strings.TrimSpace(out) != "{\n  \"counters\": []\n}" {
		t.Errorf("empty -o json = %q", out)
	}

	// The server's refusal, as is, with the "refused" exit code.
	r = h.Run("counters", "get", "--caller", "alice")
	if r.Code != cmdutil.ExitRefused || !strings.Contains(r.ErrOut, "caller: must be user:<name> or agent:<client id>") {
		t.Errorf("bad caller: exit %d, stderr %q", r.Code, r.ErrOut)
	}
}

// A list cut short by --limit (or by the server's own bound) says so: on
// stderr for a table, as "truncated" in a document; a whole list does not.
func TestGetSaysTruncated(t *testing.T) {
	h := start(t)
	def := []string{"counters", "get", "--definition", "caller:group:developers:60"}
	r := h.RunWith(clitest.Opts{TTY: true}, append(def, "--limit", "1")...)
	if r.Code != 0 || strings.Count(strings.TrimSpace(r.Out), "\n") != 1 || !strings.Contains(r.ErrOut, "Warning: the server stopped before it had seen every counter") {
		t.Errorf("--limit 1 of 2 buckets: exit %d, stdout %q, stderr %q; want one row and a warning", r.Code, r.Out, r.ErrOut)
	}
	var doc struct {
		Counters  []client.Counter `json:"counters"`
		Truncated bool             `json:"truncated"`
	}
	if err := json.Unmarshal([]byte(h.Must(append(def, "--limit", "1", "-o", "json")...)), &doc); err != nil || len(doc.Counters) != 1 || !doc.Truncated {
		t.Errorf("--limit 1 -o json = %+v, %v; want one counter, truncated", doc, err)
	}
	r = h.RunWith(clitest.Opts{TTY: true}, append(def, "--limit", "2")...)
	if r.Code != 0 || strings.Count(strings.TrimSpace(r.Out), "\n") != 2 || r.ErrOut != "" {
		t.Errorf("--limit 2 of 2 buckets: exit %d, stdout %q, stderr %q; want two rows, no warning", r.Code, r.Out, r.ErrOut)
	}
	for _, bad := range []string{"0", "10001"} {
		r = h.Run(append(def, "--limit", bad)...)
		if r.Code != cmdutil.ExitUsage || !strings.Contains(r.ErrOut, "--limit must be between 1 and 10000") {
			t.Errorf("--limit %s: exit %d, stderr %q; want a usage error", bad, r.Code, r.ErrOut)
		}
	}
}

func TestReset(t *testing.T) {
	h := start(t)
	alice := map[string]int64{"c|60|user:alice": 3}
	al := map[string]int64{"c|60|user:al": 1}
	reset := []string{"counters", "reset", "--caller", "user:al"}

	// Off a terminal, only with --yes.
	r := h.Run(reset...)
	if r.Code != cmdutil.ExitUsage || !strings.Contains(r.ErrOut, "pass --yes") {
		t.Errorf("without --yes: exit %d, stderr %q", r.Code, r.ErrOut)
	}
	// On a terminal, the answer decides.
	r = h.RunWith(clitest.Opts{TTY: true, Stdin: "n\n"}, reset...)
	if r.Code != cmdutil.ExitError || !strings.Contains(r.ErrOut, "Reset the counters of caller user:al? [y/N]") {
		t.Errorf("declined: exit %d, stderr %q", r.Code, r.ErrOut)
	}
	// A dry run asks nothing and changes nothing.
	if out := h.Must(append(reset, "--dry-run")...); out != "caller user:al: 1 counter would be reset\n" {
		t.Errorf("dry run = %q", out)
	}
	if got := counts(h, "--caller", "user:al"); !sameCounts(got, al) {
		t.Errorf("al after a declined reset and a dry run = %v", got)
	}

	r = h.RunWith(clitest.Opts{TTY: true, Stdin: "y\n"}, reset...)
	if r.Code != 0 || r.Out != "caller user:al: 1 counter reset\n" {
		t.Errorf("confirmed: exit %d, stdout %q, stderr %q", r.Code, r.Out, r.ErrOut)
	}
	if got := counts(h, "--caller", "user:al"); len(got) != 0 {
		t.Errorf("al after the reset = %v", got)
	}
	if got := counts(h, "--caller", "user:alice"); !sameCounts(got, alice) {
		t.Errorf("alice after al's reset = %v", got)
	}

	// A viewer may look but not reset.
	viewer := h.Env.Token(t, "grafana", "viewer")
	if r := h.RunWith(clitest.Opts{Token: viewer}, "counters", "get", "--caller", "user:alice"); r.Code != 0 {
		t.Errorf("viewer get: exit %d, stderr %q", r.Code, r.ErrOut)
	}
	if r := h.RunWith(clitest.Opts{Token: viewer}, "counters", "reset", "--caller", "user:alice", "--yes"); r.Code != cmdutil.ExitAuth {
		t.Errorf("viewer reset: exit %d, stderr %q", r.Code, r.ErrOut)
	}

	var doc map[string]any
	if err := json.Unmarshal([]byte(h.Must("counters", "reset", "--target", "mcp_server:mcpgw", "--yes", "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["reset"] != true || doc["removed"] != 1.0 {
		t.Errorf("reset -o json = %v", doc)
	}
	if got := counts(h, "--caller", "user:alice"); !sameCounts(got, alice) {
		t.Errorf("alice after mcpgw's reset = %v", got)
	}

	// The audit log has both resets.
	out := h.Must("audit", "list", "--resource", "counters", "-o", "json")
	for _, id := range []string{`"resource_id": "caller=user:al"`, `"resource_id": "target=mcp_server:mcpgw"`} {
		if !strings.Contains(out, id) {
			t.Errorf("audit list lacks %s:\n%s", id, out)
		}
	}
}

// TestDefinitionAndCallerAgree is the report: alice, a member of
// power-users and of developers (whose tighter limit decides her 60 s
// bucket, which the enforce caller definitions of that window share), has
// been counted; `counters get --definition caller:group:power-users:60`
// must show the count `--caller user:alice` shows, and a reset by that
// definition must reset exactly what its get showed.
func TestDefinitionAndCallerAgree(t *testing.T) {
	h := clitest.StartParallel(t)
	ctx := context.Background()
	c := h.Client()
	tight, loose := 100, 1000
	for _, d := range []rl.Definition{
		{Axis: "caller", EntityType: "group", Name: "developers", WindowSeconds: 60, UserMaxRequests: &tight, Enabled: true},
		{Axis: "caller", EntityType: "group", Name: "power-users", WindowSeconds: 60, UserMaxRequests: &loose, Enabled: true},
	} {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []rl.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"developers", "power-users"}},
		{SubjectType: "user", Subject: "bob", Groups: []string{"developers"}},
	} {
		if _, err := c.PutMembership(ctx, m, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "alice", "bob"} {
		if d, err := h.Env.Enforcer.Check(ctx, enforce.Call{Username: u, TargetType: "mcp_server", TargetName: "mcpgw"}); err != nil || !d.Allowed {
			t.Fatalf("check %s = %+v, %v", u, d, err)
		}
	}
	alice := map[string]int64{"c|60|user:alice": 2}
	if got := counts(h, "--caller", "user:alice"); !sameCounts(got, alice) {
		t.Fatalf("--caller user:alice = %v, want %v", got, alice)
	}
	if got := counts(h, "--definition", "caller:group:power-users:60"); !sameCounts(got, alice) {
		t.Errorf("--definition caller:group:power-users:60 = %v, want alice's bucket as --caller shows it, %v", got, alice)
	}
	if got := counts(h, "--definition", "caller:group:developers:60"); !sameCounts(got, map[string]int64{"c|60|user:alice": 2, "c|60|user:bob": 1}) {
		t.Errorf("--definition caller:group:developers:60 = %v, want alice's 2 and bob's 1", got)
	}
	if out := h.Must("counters", "reset", "--definition", "caller:group:power-users:60", "--yes"); out != "definition caller:group:power-users:60: 1 counter reset\n" {
		t.Errorf("reset by definition = %q, want the 1 counter its get showed", out)
	}
	if got := counts(h, "--definition", "caller:group:power-users:60"); len(got) != 0 {
		t.Errorf("--definition caller:group:power-users:60 after its reset = %v", got)
	}
	if got := counts(h, "--caller", "user:bob"); !sameCounts(got, map[string]int64{"c|60|user:bob": 1}) {
		t.Errorf("bob, no member of power-users, after its reset = %v", got)
	}
}
