package admin_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/admin"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/pkg/client"
)

// harness runs rlctl command lines against one real rlapi.
type harness struct {
	t      *testing.T
	env    *apitest.Env
	config string
}

func start(t *testing.T) *harness {
	t.Helper()
	t.Parallel()
	return &harness{t: t, env: apitest.Start(t, api.Config{}), config: filepath.Join(t.TempDir(), "config.yaml")}
}

type result struct {
	code        int
	out, errOut string
}

// run runs one command line with tok; tty makes stdin and stdout
// terminals, stdin is what the user types.
func (h *harness) run(tok string, tty bool, stdin string, args ...string) result {
	h.t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(stdin)
	ios.SetStdinTTY(tty)
	ios.SetStdoutTTY(tty)
	getenv := func(k string) string {
		if k == "RLCTL_CONFIG" {
			return h.config
		}
		return ""
	}
	full := append([]string{"--server", h.env.URL, "--token", tok}, args...)
	code := cli.Run(context.Background(), full, ios, getenv)
	return result{code, out.String(), errOut.String()}
}

func (h *harness) admin(args ...string) result {
	h.t.Helper()
	return h.run(h.env.AdminToken, false, "", args...)
}

func (h *harness) must(args ...string) string {
	h.t.Helper()
	r := h.admin(args...)
	if r.code != 0 {
		h.t.Fatalf("rlctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.out, r.errOut)
	}
	return r.out
}

func (h *harness) client() *client.Client {
	h.t.Helper()
	c, err := client.New(h.env.URL, client.Options{Token: h.env.AdminToken})
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

func TestAddListRemove(t *testing.T) {
	h := start(t)

	if got := h.must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "on-call"); got != "admin/user:alice created\n" {
		t.Errorf("add: got %q", got)
	}
	if got := h.must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "lead"); got != "admin/user:alice updated: note: \"on-call\" -> \"lead\"\n" {
		t.Errorf("add again: got %q", got)
	}
	if got := h.must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "lead"); got != "admin/user:alice unchanged\n" {
		t.Errorf("add unchanged: got %q", got)
	}
	h.must("admin", "add", "--subject-type", "client", "--subject", "ops-bot")

	// Piped: tab-separated rows, no header.
	rows := strings.Split(strings.TrimSpace(h.must("admin", "list")), "\n")
	if len(rows) != 2 {
		t.Fatalf("list: want 2 rows, got %q", rows)
	}
	var alice []string
	for _, r := range rows {
		if f := strings.Split(r, "\t"); f[1] == "alice" {
			alice = f
		}
	}
	if len(alice) != 5 || alice[0] != "user" || alice[2] != "lead" || alice[4] != "test-admin" {
		t.Errorf("alice's row: got %q, want user, alice, lead, <time>, test-admin", alice)
	}
	if _, err := time.Parse(time.RFC3339, alice[3]); err != nil {
		t.Errorf("CREATED: %v", err)
	}

	// On a terminal: a header.
	tty := h.run(h.env.AdminToken, true, "", "admin", "list")
	if first, _, _ := strings.Cut(tty.out, "\n"); strings.Join(strings.Fields(first), " ") != "SUBJECT-TYPE SUBJECT NOTE CREATED CREATED-BY" {
		t.Errorf("header: got %q", first)
	}

	var doc struct {
		Admins []map[string]any `json:"admins"`
	}
	if err := json.Unmarshal([]byte(h.must("admin", "list", "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Admins) != 2 || doc.Admins[0]["created_by"] != "test-admin" || doc.Admins[0]["subject_type"] == nil {
		t.Errorf("list -o json: got %v", doc)
	}
	if got := h.must("admin", "list", "-o", "yaml"); !strings.HasPrefix(got, "admins:\n") || !strings.Contains(got, "subject: alice") {
		t.Errorf("list -o yaml: got %q", got)
	}
	if got := h.must("admin", "list", "-o", "name"); got != "admin/client:ops-bot\nadmin/user:alice\n" && got != "admin/user:alice\nadmin/client:ops-bot\n" {
		t.Errorf("list -o name: got %q", got)
	}
	if got := h.must("admin", "add", "--subject-type", "user", "--subject", "bob", "-o", "json"); !strings.Contains(got, `"subject": "bob"`) || !strings.Contains(got, `"created_by": "test-admin"`) {
		t.Errorf("add -o json: got %q", got)
	}

	// remove: refused without --yes when stdin is not a terminal.
	r := h.admin("admin", "remove", "user:alice")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "pass --yes") {
		t.Errorf("remove without --yes: exit %d, stderr %q; want 2 and a hint", r.code, r.errOut)
	}
	if got := h.must("admin", "list", "-o", "name"); !strings.Contains(got, "user:alice") {
		t.Errorf("alice removed without confirmation: %q", got)
	}
	if got := h.must("admin", "remove", "user:alice", "--yes"); got != "admin/user:alice removed\n" {
		t.Errorf("remove --yes: got %q", got)
	}
	if got := h.must("admin", "remove", "--subject-type", "client", "--subject", "ops-bot", "-y"); got != "admin/client:ops-bot removed\n" {
		t.Errorf("remove by flags: got %q", got)
	}
	if got := h.must("admin", "list", "-o", "name"); got != "admin/user:bob\n" {
		t.Errorf("after removals: got %q", got)
	}
	if got := h.must("admin", "list", "-o", "json"); !strings.Contains(got, `"admins": [`) {
		t.Errorf("list -o json keeps the envelope: %q", got)
	}
}

func TestRemoveAsksOnTerminal(t *testing.T) {
	h := start(t)
	h.must("admin", "add", "--subject-type", "user", "--subject", "carol")

	r := h.run(h.env.AdminToken, true, "n\n", "admin", "remove", "user:carol")
	if r.code != cmdutil.ExitError || !strings.Contains(r.errOut, "Revoke the administrator privileges of user:carol? [y/N]") {
		t.Errorf("answer n: exit %d, stderr %q; want 1 and the question", r.code, r.errOut)
	}
	if got := h.must("admin", "list", "-o", "name"); got != "admin/user:carol\n" {
		t.Errorf("carol removed after answering n: %q", got)
	}
	if r := h.run(h.env.AdminToken, true, "y\n", "admin", "remove", "user:carol"); r.code != 0 || r.out != "admin/user:carol removed\n" {
		t.Errorf("answer y: exit %d, stdout %q", r.code, r.out)
	}
}

func TestExitCodes(t *testing.T) {
	h := start(t)
	viewer := h.env.Token(t, "viewer", "viewer")
	ctx := context.Background()
	if _, err := h.client().Quarantine(ctx, "user", "mallory", client.QuarantineRequest{Reason: "abuse"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		tok  string
		args []string
		code int
		msg  string
	}{
		{"viewer may not add", viewer, []string{"admin", "add", "--subject-type", "user", "--subject", "dave"}, cmdutil.ExitAuth, ""},
		{"viewer may not remove", viewer, []string{"admin", "remove", "user:dave", "--yes"}, cmdutil.ExitAuth, ""},
		{"viewer may list", viewer, []string{"admin", "list"}, cmdutil.ExitOK, ""},
		{"quarantined subject", h.env.AdminToken, []string{"admin", "add", "--subject-type", "user", "--subject", "mallory"}, cmdutil.ExitRefused, "quarantine"},
		{"missing --subject", h.env.AdminToken, []string{"admin", "add", "--subject-type", "user"}, cmdutil.ExitUsage, "--subject is required"},
		{"missing --subject-type", h.env.AdminToken, []string{"admin", "add", "--subject", "x"}, cmdutil.ExitUsage, "--subject-type is required"},
		{"targets cannot be admins", h.env.AdminToken, []string{"admin", "add", "--subject-type", "server", "--subject", "x"}, cmdutil.ExitUsage, "must be one of user, client"},
		{"unknown flag", h.env.AdminToken, []string{"admin", "add", "--subjet", "x"}, cmdutil.ExitUsage, "unknown flag"},
		{"remove nobody", h.env.AdminToken, []string{"admin", "remove", "--yes"}, cmdutil.ExitUsage, "say which administrator"},
		{"remove twice over", h.env.AdminToken, []string{"admin", "remove", "user:a", "--subject-type", "user", "--subject", "a", "--yes"}, cmdutil.ExitUsage, "not both"},
		{"remove malformed", h.env.AdminToken, []string{"admin", "remove", "alice", "--yes"}, cmdutil.ExitUsage, "want <subject_type>:<subject>"},
		{"remove unknown", h.env.AdminToken, []string{"admin", "remove", "user:nobody", "--yes"}, cmdutil.ExitNotFound, ""},
		{"list takes no args", h.env.AdminToken, []string{"admin", "list", "x"}, cmdutil.ExitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.run(tt.tok, false, "", tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, tt.code, r.out, r.errOut)
			}
			if !strings.Contains(r.errOut, tt.msg) {
				t.Errorf("stderr %q does not mention %q", r.errOut, tt.msg)
			}
		})
	}
}

func TestDryRun(t *testing.T) {
	h := start(t)
	if got := h.must("admin", "add", "--subject-type", "user", "--subject", "erin", "--dry-run"); got != "admin/user:erin would be created\n" {
		t.Errorf("add --dry-run: got %q", got)
	}
	if got := h.must("admin", "list", "-o", "name"); got != "" {
		t.Errorf("dry run stored an admin: %q", got)
	}
}

func TestCompleteAdmins(t *testing.T) {
	h := start(t)
	h.must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "lead")
	h.must("admin", "add", "--subject-type", "client", "--subject", "bot")

	got := h.must("__complete", "admin", "remove", "us")
	if !strings.Contains(got, "user:alice\tlead\n") || strings.Contains(got, "client:bot") || !strings.Contains(got, ":4\n") {
		t.Errorf("completion of %q: got %q, want user:alice with its note and NoFileComp (:4)", "us", got)
	}
	if got := h.must("__complete", "admin", "remove", "user:alice", ""); strings.Contains(got, "client:bot") {
		t.Errorf("second argument completed: %q", got)
	}
}

// TestFlags checks flag parsing through runF, with no server.
func TestFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.NewFactory(ios, func(string) string { return "" })

	var got *admin.RemoveOptions
	run := func(cmd *cobra.Command, args ...string) error {
		cmd.SetArgs(args)
		cmd.SetOut(ios.Out)
		cmd.SetErr(ios.ErrOut)
		return cmd.Execute()
	}
	remove := func(args ...string) error {
		got = nil
		return run(admin.NewCmdRemove(f, func(o *admin.RemoveOptions) error { got = o; return nil }), args...)
	}
	tests := []struct {
		args          []string
		typ, subj     string
		yes, wantFail bool
	}{
		{args: []string{"user:alice"}, typ: "user", subj: "alice"},
		{args: []string{"client:a:b", "-y"}, typ: "client", subj: "a:b", yes: true},
		{args: []string{"--subject-type", "client", "--subject", "bot", "--yes"}, typ: "client", subj: "bot", yes: true},
		{args: []string{"user:"}, wantFail: true},
		{args: []string{}, wantFail: true},
		{args: []string{"a:b", "c:d"}, wantFail: true},
	}
	for _, tt := range tests {
		err := remove(tt.args...)
		if tt.wantFail {
			if err == nil || cmdutil.ExitCode(err) != cmdutil.ExitUsage {
				t.Errorf("%q: got %v, want a usage error", tt.args, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.args, err)
			continue
		}
		if got.SubjectType != tt.typ || got.Subject != tt.subj || got.Yes != tt.yes {
			t.Errorf("%q: got %+v", tt.args, *got)
		}
	}

	var add *admin.AddOptions
	cmd := admin.NewCmdAdd(f, func(o *admin.AddOptions) error { add = o; return nil })
	if err := run(cmd, "--subject-type", "client", "--subject", "bot", "--note", "ci", "--dry-run"); err != nil {
		t.Fatal(err)
	}
	if add.Admin.SubjectType != "client" || add.Admin.Subject != "bot" || add.Admin.Note != "ci" || !add.DryRun {
		t.Errorf("add: got %+v", *add)
	}
}
