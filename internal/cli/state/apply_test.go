package state_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// seed gives the server a bit of everything through the per-object
// routes, the way people and other tools write: limits of each axis, a
// server group, memberships, two quarantines (one expiring), an admin.
// It returns how many objects export lists.
func seed(t *testing.T, r *clitest.Rlctl) int {
	t.Helper()
	ctx := context.Background()
	c := r.Client()
	defs := []ratelimit.Definition{
		{Axis: "caller", EntityType: "group", Name: "developers", WindowSeconds: 60, UserMaxRequests: ptr(100), AgentMaxRequests: ptr(50), Enabled: true},
		{Axis: "caller", EntityType: "group", Name: "developers", WindowSeconds: 86400, UserMaxRequests: ptr(5000), Enabled: true, Description: "daily cap"},
		{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true, Description: "the main gateway"},
		{Axis: "target", EntityType: "server_group", Name: "fragile", WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"aws-kb", "airegistry-tools"},
			FailClosed: true, Mode: "shadow"},
	}
	for _, d := range defs {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatalf("seed %s: %v", d.Key(), err)
		}
	}
	mems := []ratelimit.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"developers"}},
		{SubjectType: "client", Subject: "ci-bot", Groups: []string{"developers"}},
	}
	for _, m := range mems {
		if _, err := c.PutMembership(ctx, m, client.WriteOptions{}); err != nil {
			t.Fatalf("seed %s: %v", m.Key(), err)
		}
	}
	if _, err := c.Quarantine(ctx, "user", "mallory", client.QuarantineRequest{Reason: "credential stuffing", ExpiresInSeconds: 3600}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Quarantine(ctx, "server", "evil-srv", client.QuarantineRequest{Reason: "exfiltration"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "root", Note: "break glass"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// 4 definitions and the 2 quarantine sentinels, 4 memberships, 1 admin.
	return 6 + 4 + 1
}

func summary(created, updated, deleted, unchanged int) string {
	return fmt.Sprintf("created %d, updated %d, deleted %d, unchanged %d\n", created, updated, deleted, unchanged)
}

var serverField = regexp.MustCompile(`(?m)^[ -]*(id|version|created_at|updated_at|updated_by|created_by|scope):`)

func TestExportThenApplyIsNoOp(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	n := seed(t, r)
	dir := t.TempDir()

	yamlDoc := r.Must("export", "--include-quarantine")
	if !strings.HasPrefix(yamlDoc, "apiVersion: rlctl/v1\nkind: State\ndefinitions:\n") {
		t.Errorf("export does not start with the header and definitions:\n%s", yamlDoc)
	}
	if m := serverField.FindString(yamlDoc); m != "" {
		t.Errorf("export carries a server field (%q):\n%s", m, yamlDoc)
	}
	for _, want := range []string{"quarantine_reason: credential stuffing", "quarantine_expires_at:", "quarantined_at:",
		"- quarantine-callers", "- quarantine-targets", "note: break glass", "name: quarantine-callers"} {
		if !strings.Contains(yamlDoc, want) {
			t.Errorf("export lacks %q:\n%s", want, yamlDoc)
		}
	}
	if again := r.Must("export", "--include-quarantine"); again != yamlDoc {
		t.Errorf("two exports differ:\n%s\n---\n%s", yamlDoc, again)
	}
	file := writeFile(t, dir, "state.yaml", yamlDoc)

	if got := r.Must("apply", "-f", file); got != summary(0, 0, 0, n) {
		t.Errorf("apply of the export printed %q, want only %q", got, summary(0, 0, 0, n))
	}
	for _, args := range [][]string{{"diff", "-f", file}, {"diff", "-f", file, "--prune"}} {
		if res := r.Run(args...); res.Code != 0 || res.Out != summary(0, 0, 0, n) {
			t.Errorf("%v after apply: exit %d, %q (stderr %q)", args, res.Code, res.Out, res.ErrOut)
		}
	}
	if got := r.Must("apply", "-f", file, "--prune", "--yes"); got != summary(0, 0, 0, n) {
		t.Errorf("apply --prune of the export printed %q", got)
	}
	if after := r.Must("export", "--include-quarantine"); after != yamlDoc {
		t.Errorf("applying the export changed the export:\n%s\n---\n%s", yamlDoc, after)
	}

	// The same in JSON, through a file and through stdin.
	jsonFile := filepath.Join(dir, "state.json")
	r.Expect(0, "export", "--include-quarantine", "--file", jsonFile)
	if got := r.Must("apply", "-f", jsonFile); got != summary(0, 0, 0, n) {
		t.Errorf("apply of the JSON export printed %q", got)
	}
	jsonDoc := r.Must("export", "--include-quarantine", "-o", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(jsonDoc), &doc); err != nil || doc["apiVersion"] != "rlctl/v1" || doc["kind"] != "State" {
		t.Errorf("export -o json: %v\n%s", err, jsonDoc)
	}
	if res := r.RunWith(clitest.Opts{Stdin: jsonDoc}, "diff", "-f", "-"); res.Code != 0 {
		t.Errorf("export | diff -f -: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
}

func TestDiffExitsSixOnChanges(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	before := r.Must("export")
	edited := strings.Replace(before, "user_max_requests: 100\n", "user_max_requests: 200\n", 1)
	edited = strings.Replace(edited, "definitions:\n", `definitions:
- axis: target
  entity_type: mcp_server
  name: new-server
  window_seconds: 60
  max_requests: 42
`, 1)
	file := writeFile(t, t.TempDir(), "state.yaml", edited)

	res := r.Expect(6, "diff", "-f", file)
	want := "definition/caller:group:developers:60 configured: user_max_requests: 100 -> 200\n" +
		"definition/target:mcp_server:new-server:60 created\n"
	// The export leaves the two quarantined subjects out: 8 unchanged.
	if !strings.HasPrefix(res.Out, want) || !strings.HasSuffix(res.Out, summary(1, 1, 0, 8)) {
		t.Errorf("diff printed:\n%s\nwant:\n%s%s", res.Out, want, summary(1, 1, 0, 8))
	}
	if res.ErrOut != "" {
		t.Errorf("diff wrote to stderr: %q", res.ErrOut)
	}

	res = r.Expect(6, "diff", "-f", file, "-o", "json")
	var report client.ApplyResult
	if err := json.Unmarshal([]byte(res.Out), &report); err != nil {
		t.Fatalf("diff -o json: %v\n%s", err, res.Out)
	}
	if !report.DryRun || report.Created != 1 || report.Updated != 1 || len(report.Changes) != 2 || report.Changes[0].Fields[0].Field != "user_max_requests" {
		t.Errorf("diff -o json: %+v", report)
	}
	if after := r.Must("export"); after != before {
		t.Error("diff changed the server")
	}

	// apply prints the same lines, then diff finds nothing.
	if got := r.Must("apply", "-f", file); got != want+summary(1, 1, 0, 8) {
		t.Errorf("apply printed:\n%s", got)
	}
	if res := r.Run("diff", "-f", file); res.Code != 0 {
		t.Errorf("diff after apply: exit %d\n%s", res.Code, res.Out)
	}
}

func TestPruneOnlyWithTheFlag(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	dir := t.TempDir()
	// Only one definition; no memberships or admins section.
	file := writeFile(t, dir, "one.yaml", `apiVersion: rlctl/v1
kind: State
definitions:
- axis: caller
  entity_type: group
  name: developers
  window_seconds: 60
  user_max_requests: 100
  agent_max_requests: 50
`)
	if got := r.Must("apply", "-f", file); got != summary(0, 0, 0, 1) {
		t.Errorf("apply without --prune: %q", got)
	}
	if got := r.Must("export", "-o", "name"); strings.Count(got, "definition/") != 6 {
		t.Errorf("apply without --prune deleted something:\n%s", got)
	}

	res := r.Expect(6, "diff", "-f", file, "--prune")
	want := "definition/caller:group:developers:86400 deleted\n" +
		"definition/target:mcp_server:mcpgw:60 deleted\n" +
		"definition/target:server_group:fragile:60 deleted\n" + summary(0, 0, 3, 1)
	if res.Out != want {
		t.Errorf("diff --prune printed:\n%s\nwant:\n%s", res.Out, want)
	}
	if got := r.Must("apply", "-f", file, "--prune", "--yes"); got != want {
		t.Errorf("apply --prune printed:\n%s", got)
	}
	names := r.Must("export", "--include-quarantine", "-o", "name")
	for _, keep := range []string{"definition/caller:group:developers:60", "definition/" + ratelimit.SentinelCallers,
		"definition/" + ratelimit.SentinelTargets, "membership/user:alice", "membership/user:mallory", "admin/user:root"} {
		if !strings.Contains(names, keep+"\n") {
			t.Errorf("after prune, %s is gone (absent sections and sentinels stay):\n%s", keep, names)
		}
	}

	// An empty, present section with --prune empties that kind.
	empty := writeFile(t, dir, "empty.yaml", "memberships: []\n")
	if got := r.Must("apply", "-f", empty); got != summary(0, 0, 0, 0) {
		t.Errorf("empty section without --prune: %q", got)
	}
	// Quarantine is left alone: the two quarantined subjects stay...
	if got := r.Must("apply", "-f", empty, "--prune", "--yes"); got != "membership/client:ci-bot deleted\nmembership/user:alice deleted\n"+summary(0, 0, 2, 0) {
		t.Errorf("empty section with --prune: %q", got)
	}
	// ... unless --quarantine says the file decides quarantine too.
	if got := r.Must("apply", "-f", empty, "--prune", "--yes", "--quarantine"); got != "quarantine/server:evil-srv removed\nquarantine/user:mallory removed\n"+
		"created 0, updated 0, deleted 0, unchanged 0; quarantine: added 0, removed 2\n" {
		t.Errorf("empty section with --prune --quarantine: %q", got)
	}
}

func TestPruneAsksFirst(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	before := r.Must("export", "--include-quarantine")
	file := writeFile(t, t.TempDir(), "s.yaml", "admins: []\n")

	// Off a terminal, --prune needs --yes, and nothing is sent.
	res := r.Expect(2, "apply", "-f", file, "--prune")
	if !strings.Contains(res.ErrOut, "pass --yes") || res.Out != "" {
		t.Errorf("refusal: stdout %q, stderr %q", res.Out, res.ErrOut)
	}
	// On a terminal it says how many it would delete; "n" keeps them.
	res = r.RunWith(clitest.Opts{TTY: true, Stdin: "n\n"}, "apply", "-f", file, "--prune")
	if res.Code != 1 || !strings.Contains(res.ErrOut, "Delete 1 object not named in the files (1 admin)") {
		t.Errorf("declined prompt: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	if after := r.Must("export", "--include-quarantine"); after != before {
		t.Error("a refused or declined prune changed the server")
	}
	res = r.RunWith(clitest.Opts{TTY: true, Stdin: "y\n"}, "apply", "-f", file, "--prune")
	if res.Code != 0 || res.Out != "admin/user:root deleted\n"+summary(0, 0, 1, 0) {
		t.Errorf("accepted prompt: exit %d, stdout %q, stderr %q", res.Code, res.Out, res.ErrOut)
	}
	// Nothing left to delete: no question.
	res = r.RunWith(clitest.Opts{TTY: true}, "apply", "-f", file, "--prune")
	if res.Code != 0 || strings.Contains(res.ErrOut, "?") {
		t.Errorf("nothing to prune: exit %d, stderr %q", res.Code, res.ErrOut)
	}
}

func TestDryRunsChangeNothing(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	before := r.Must("export", "--include-quarantine")
	// A create, updates of each kind (quarantine included), and with
	// --prune deletes.
	file := writeFile(t, t.TempDir(), "s.yaml", `definitions:
- {axis: caller, entity_type: group, name: developers, window_seconds: 60, user_max_requests: 120, agent_max_requests: 50}
- {axis: target, entity_type: mcp_server, name: /newsrv/, window_seconds: 60, max_requests: 10, description: "  new  "}
- {axis: target, entity_type: server_group, name: fragile, window_seconds: 60, max_requests: 100, members: [aws-kb, extra], enabled: false}
- {axis: quarantine, entity_type: group, name: quarantine-callers, window_seconds: 1, enabled: false}
memberships:
- {subject_type: user, subject: alice, groups: [developers, developers]}
- {subject_type: user, subject: mallory, groups: [quarantine-callers], quarantine_reason: still at it}
- {subject_type: user, subject: eve, groups: [quarantine-callers]}
admins:
- {subject_type: user, subject: root}
`)
	server := r.Run("apply", "-f", file, "--prune", "--quarantine", "--dry-run=server")
	local := r.Run("apply", "-f", file, "--prune", "--quarantine", "--dry-run=client")
	bare := r.Run("apply", "-f", file, "--prune", "--quarantine", "--dry-run")
	diff := r.Run("diff", "-f", file, "--prune", "--quarantine")
	for name, res := range map[string]clitest.Result{"server": server, "client": local, "bare": bare} {
		if res.Code != 0 {
			t.Errorf("--dry-run=%s: exit %d\n%s", name, res.Code, res.ErrOut)
		}
	}
	if diff.Code != 6 {
		t.Errorf("diff: exit %d\n%s", diff.Code, diff.ErrOut)
	}
	if !strings.Contains(server.ErrOut, "(server dry run") || !strings.Contains(local.ErrOut, "(client dry run") {
		t.Errorf("dry-run notes: server %q, client %q", server.ErrOut, local.ErrOut)
	}
	// One report, wherever it was computed.
	if local.Out != server.Out || bare.Out != server.Out || diff.Out != server.Out {
		t.Errorf("dry runs differ:\nserver:\n%s\nclient:\n%s\nbare:\n%s\ndiff:\n%s", server.Out, local.Out, bare.Out, diff.Out)
	}
	for _, want := range []string{
		"definition/target:mcp_server:newsrv:60 created\n",
		`definition/target:server_group:fragile:60 configured: fail_closed: true -> false, fail_policy: "closed" -> (none), members: ["aws-kb","airegistry-tools"] -> ["aws-kb","extra"], mode: "shadow" -> "enforce"` + "\n",
		"definition/" + ratelimit.SentinelCallers + " configured: ",
		"enabled: true -> false",
		"definition/target:mcp_server:mcpgw:60 deleted\n",
		`quarantine/user:mallory configured: quarantine_expires_at: `,
		"quarantine/user:eve added\n",
		"quarantine/server:evil-srv removed\n",
		"membership/client:ci-bot deleted\n",
		`admin/user:root configured: note: "break glass" -> (none)` + "\n",
		"created 1, updated 5, deleted 3, unchanged 1; quarantine: added 1, removed 1\n",
	} {
		if !strings.Contains(server.Out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, server.Out)
		}
	}
	if after := r.Must("export", "--include-quarantine"); after != before {
		t.Errorf("a dry run changed the server:\n%s\n---\n%s", before, after)
	}
}

func TestFailedApplyChangesNothing(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	before := r.Must("export", "--include-quarantine")
	var b strings.Builder
	b.WriteString("definitions:\n")
	for i := range 2000 {
		limit := 100
		if i == 1999 {
			limit = 1 // below the floor of 20/min
		}
		fmt.Fprintf(&b, "- {axis: caller, entity_type: group, name: g%04d, window_seconds: 60, user_max_requests: %d}\n", i, limit)
	}
	file := writeFile(t, t.TempDir(), "big.yaml", b.String())
	res := r.Expect(5, "apply", "-f", file)
	if !strings.Contains(res.ErrOut, "definitions[1999].user_max_requests") || !strings.Contains(res.ErrOut, "(in "+file+")") {
		t.Errorf("stderr does not name definitions[1999].user_max_requests in %s: %q", file, res.ErrOut)
	}
	if res.Out != "" {
		t.Errorf("a refused apply printed to stdout: %q", res.Out)
	}
	if after := r.Must("export", "--include-quarantine"); after != before {
		t.Error("a refused apply changed the server")
	}
	// The client dry run finds what the rules find without the server's
	// floors: nothing wrong here, 2000 creates.
	if got := r.Must("apply", "-f", file, "--dry-run=client"); !strings.HasSuffix(got, summary(2000, 0, 0, 0)) {
		t.Errorf("client dry run: %s", got[max(0, len(got)-200):])
	}
}

func TestDirectoryAndFilesMerge(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	dir := filepath.Join(t.TempDir(), "state")
	writeFile(t, dir, "10-defs.yaml", `apiVersion: rlctl/v1
kind: State
definitions:
- {axis: caller, entity_type: group, name: testers, window_seconds: 60, user_max_requests: 30}
`)
	writeFile(t, dir, "20-more.json", `{"definitions": [{"axis": "caller", "entity_type": "group", "name": "ops", "window_seconds": 60, "user_max_requests": 40}],
 "memberships": [{"subject_type": "user", "subject": "bob", "groups": ["testers", "ops"]}]}`)
	writeFile(t, dir, "30-empty.yml", "# nothing here yet\n")
	writeFile(t, dir, "README.md", "not: [state\n")
	writeFile(t, dir+"/sub", "ignored.yaml", "definitions: [oops\n")
	extra := writeFile(t, t.TempDir(), "extra.yaml", "memberships:\n- {subject_type: user, subject: carol, groups: [ops]}\n")

	want := "definition/caller:group:ops:60 created\n" +
		"definition/caller:group:testers:60 created\n" +
		"membership/user:bob created\n" +
		"membership/user:carol created\n" + summary(4, 0, 0, 0)
	if got := r.Must("apply", "-f", dir, "-f", extra); got != want {
		t.Errorf("apply -f DIR -f FILE:\n%s\nwant:\n%s", got, want)
	}
	// Admins are in no file: left alone even with --prune. Definitions and
	// memberships are: pruned to the files' objects (sentinels stay).
	got := r.Must("apply", "-f", dir, "-f", extra, "--prune", "--yes")
	// Quarantine is left alone: mallory and evil-srv stay quarantined.
	if !strings.HasSuffix(got, summary(0, 0, 6, 4)) || strings.Contains(got, "admin/") || strings.Contains(got, "quarantine/") {
		t.Errorf("apply --prune of the merge:\n%s", got)
	}
	if names := r.Must("export", "-o", "name"); !strings.Contains(names, "admin/user:root\n") || strings.Count(names, "\n") != 4+2+1 {
		t.Errorf("after the pruning merge:\n%s", names)
	}
}

func TestStdin(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	yamlIn := "definitions:\n- {axis: caller, entity_type: group, name: viayaml, window_seconds: 60, user_max_requests: 30}\n"
	jsonIn := `  {"definitions": [{"axis": "caller", "entity_type": "group", "name": "viajson", "window_seconds": 60, "user_max_requests": 30}]}`
	for _, tc := range []struct{ name, in, id string }{{"yaml", yamlIn, "viayaml"}, {"json", jsonIn, "viajson"}} {
		res := r.RunWith(clitest.Opts{Stdin: tc.in}, "apply", "-f", "-")
		if res.Code != 0 || res.Out != "definition/caller:group:"+tc.id+":60 created\n"+summary(1, 0, 0, 0) {
			t.Errorf("%s on stdin: exit %d, %q %q", tc.name, res.Code, res.Out, res.ErrOut)
		}
	}
	res := r.RunWith(clitest.Opts{Stdin: yamlIn}, "apply", "-f", "-", "-f", "-")
	if res.Code != 2 || !strings.Contains(res.ErrOut, "only once") {
		t.Errorf("-f - twice: exit %d, %q", res.Code, res.ErrOut)
	}
}

func TestFileProblemsExitTwo(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	before := r.Must("export", "--include-quarantine")
	dir := t.TempDir()
	good := writeFile(t, dir, "good.yaml", "definitions:\n- {axis: target, entity_type: mcp_server, name: mcpgw, window_seconds: 60, max_requests: 1}\n")
	cases := []struct {
		name  string
		files map[string]string
		args  []string
		want  []string
	}{
		{"unknown field in YAML", map[string]string{"bad.yaml": "definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: 60}\n- {axis: caller, entity_type: group, name: h, window_seconds: 60, user_max_request: 5}\n"},
			nil, []string{"bad.yaml: definitions[1].user_max_request: unknown field"}},
		{"unknown field in JSON", map[string]string{"bad.json": `{"memberships": [{"subject_type": "user", "subject": "a", "group": ["x"]}]}`},
			nil, []string{"bad.json: memberships[0].group: unknown field"}},
		{"unknown admin field", map[string]string{"bad.yaml": "admins:\n- {subject_type: user, subject: a, notes: x}\n"},
			nil, []string{"bad.yaml: admins[0].notes: unknown field"}},
		{"unknown section", map[string]string{"bad.yaml": "definition: []\n"},
			nil, []string{"bad.yaml: definition: unknown field"}},
		{"wrong type", map[string]string{"bad.yaml": "definitions:\n- {axis: caller, entity_type: group, name: g, window_seconds: sixty}\n"},
			nil, []string{"bad.yaml: definitions[0].window_seconds: must be an integer, not string"}},
		{"wrong header", map[string]string{"bad.yaml": "apiVersion: v2\nkind: Deployment\ndefinitions: []\n"},
			nil, []string{`bad.yaml: apiVersion: must be "rlctl/v1", not "v2"`, `bad.yaml: kind: must be "State", not "Deployment"`}},
		{"YAML syntax", map[string]string{"bad.yaml": "definitions: [\n"},
			nil, []string{"bad.yaml: yaml: line"}},
		{"JSON syntax", map[string]string{"bad.json": "{\n  \"definitions\": [}\n"},
			nil, []string{"bad.json: line 2, column"}},
		{"duplicate across files", map[string]string{"dup.yaml": "definitions:\n- {axis: target, entity_type: mcp_server, name: /mcpgw/, window_seconds: 60, max_requests: 2}\n"},
			[]string{"-f", good}, []string{`dup.yaml: definitions[0]: duplicate id "target:mcp_server:mcpgw:60", also at ` + good + `: definitions[0]`}},
		{"duplicate in one file", map[string]string{"dup.yaml": "memberships:\n- {subject_type: user, subject: a, groups: [g]}\n- {subject_type: user, subject: b, groups: [g]}\n- {subject_type: user, subject: a, groups: [h]}\n"},
			nil, []string{`dup.yaml: memberships[2]: duplicate id "user:a", also at `, `dup.yaml: memberships[0]`}},
		{"no sections", map[string]string{"empty.yaml": "apiVersion: rlctl/v1\nkind: State\n"},
			nil, []string{"nothing to apply"}},
		{"several problems", map[string]string{"a.yaml": "definitions: {}\n", "b.yaml": "admins: [{subject: x, foo: 1}]\n"},
			nil, []string{"2 problems in the files; nothing was sent:", "a.yaml: definitions: must be a list", "b.yaml: admins[0].foo: unknown field"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sub := t.TempDir()
			args := append([]string{"apply"}, tc.args...)
			for name, content := range tc.files {
				args = append(args, "-f", writeFile(t, sub, name, content))
			}
			res := r.Run(args...)
			if res.Code != 2 {
				t.Fatalf("exit %d, want 2\nstdout: %s\nstderr: %s", res.Code, res.Out, res.ErrOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.ErrOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, res.ErrOut)
				}
			}
		})
	}
	for _, args := range [][]string{{"apply"}, {"diff"}, {"apply", "-f", filepath.Join(dir, "missing.yaml")},
		{"apply", "-f", good, "--dry-run=maybe"}, {"apply", "-f", dir + "/nothing-here"}} {
		if res := r.Run(args...); res.Code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, res.Code, res.ErrOut)
		}
	}
	if after := r.Must("export", "--include-quarantine"); after != before {
		t.Error("a file problem let something through to the server")
	}
}

// TestQuarantineIsIncidentState: export leaves quarantine out, and apply
// leaves it as it is unless --quarantine, so CI never redoes or undoes an
// incident action: the export → release → apply loop keeps the release,
// a quarantine made after the export survives the apply (with --prune
// too), a file that would change quarantine is refused, and with
// --quarantine the changes are named quarantine/<id>, never
// membership/<id> created.
func TestQuarantineIsIncidentState(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(t, r)
	quarantined := func() []string {
		t.Helper()
		q, err := r.Client().ListQuarantine(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range append(q.Callers, q.Targets...) {
			ids = append(ids, e.ID)
		}
		return ids
	}
	exported := r.Must("export")
	for _, quarantinedOnly := range []string{"mallory", "evil-srv"} {
		if strings.Contains(exported, quarantinedOnly) {
			t.Errorf("export names %q:\n%s", quarantinedOnly, exported)
		}
	}
	if strings.Contains(exported, "- quarantine-callers") || strings.Contains(exported, "quarantine_reason") {
		t.Errorf("export writes quarantine:\n%s", exported)
	}
	file := writeFile(t, t.TempDir(), "state.yaml", exported)

	// The incident ends: mallory is released. Applying the export (what CI
	// does) must not quarantine her again, nor release evil-srv.
	r.Must("quarantine", "remove", "--subject-type", "user", "--subject", "mallory", "--yes")
	for _, args := range [][]string{{"apply", "-f", file}, {"apply", "-f", file, "--prune", "--yes"}} {
		if got := r.Must(args...); strings.Contains(got, "quarantine") || strings.Contains(got, "mallory") {
			t.Errorf("%v printed %q", args, got)
		}
	}
	if got := quarantined(); len(got) != 1 || got[0] != "server:evil-srv" {
		t.Errorf("quarantine after export, release, apply: %v, want only server:evil-srv", got)
	}

	// A new incident after the export: alice is quarantined. The apply
	// keeps her quarantine (and her groups from the file).
	r.Must("quarantine", "add", "--subject-type", "user", "--subject", "alice", "--reason", "leaked key", "--yes")
	if res := r.Run("diff", "-f", file, "--prune"); res.Code != 0 {
		t.Errorf("diff with a quarantine made after the export: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	r.Must("apply", "-f", file, "--prune", "--yes")
	if m, err := r.Client().GetMembership(context.Background(), "user:alice"); err != nil || !m.HasGroup(ratelimit.GroupQuarantineCallers) ||
		!m.HasGroup("developers") || m.QuarantineReason != "leaked key" {
		t.Errorf("alice after the apply: %+v, %v; want developers and still quarantined for the leaked key", m, err)
	}

	// A file that would change quarantine is refused without --quarantine,
	// on the server and in the client dry run, naming the file.
	change := writeFile(t, t.TempDir(), "q.yaml", "memberships:\n- {subject_type: user, subject: mallory, groups: [quarantine-callers]}\n")
	for _, args := range [][]string{{"apply", "-f", change}, {"diff", "-f", change}, {"apply", "-f", change, "--dry-run=client"}} {
		res := r.Run(args...)
		if res.Code != 5 || !strings.Contains(res.ErrOut, "user:mallory: the file puts it in quarantine-callers, and it is not quarantined") ||
			!strings.Contains(res.ErrOut, "--quarantine") || !strings.Contains(res.ErrOut, "q.yaml") {
			t.Errorf("%v: exit %d, stderr %q", args, res.Code, res.ErrOut)
		}
	}
	if got := quarantined(); len(got) != 2 {
		t.Errorf("a refused apply changed quarantine: %v", got)
	}

	// With --quarantine the file decides, and says so by name.
	want := "quarantine/user:mallory added\ncreated 0, updated 0, deleted 0, unchanged 0; quarantine: added 1, removed 0\n"
	for _, args := range [][]string{{"diff", "-f", change, "--quarantine"}, {"apply", "-f", change, "--quarantine", "--dry-run=client"}} {
		if res := r.Run(args...); res.Out != want {
			t.Errorf("%v printed %q, want %q", args, res.Out, want)
		}
	}
	if got := r.Must("apply", "-f", change, "--quarantine"); got != want {
		t.Errorf("apply --quarantine printed %q", got)
	}
	if got := quarantined(); len(got) != 3 {
		t.Errorf("after apply --quarantine: %v, want mallory back", got)
	}
	// And the full export keeps it all, for a backup.
	if full := r.Must("export", "--include-quarantine"); !strings.Contains(full, "quarantine_reason: leaked key") || !strings.Contains(full, "subject: evil-srv") {
		t.Errorf("export --include-quarantine:\n%s", full)
	}
}
