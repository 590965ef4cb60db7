package admin_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/cli/admin"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/client"
)

func TestAddListRemove(t *testing.T) {
	h := clitest.StartParallel(t)

	if got := h.Must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "on-call"); got != "admin/user:alice created\n" {
		t.Errorf("add: got %q", got)
	}
	if got := h.Must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "lead"); got != "admin/user:alice updated: note: \"on-call\" -> \"lead\"\n" {
		t.Errorf("add again: got %q", got)
	}
	if got := h.Must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "lead"); got != "admin/user:alice unchanged\n" {
		t.Errorf("add unchanged: got %q", got)
	}
	h.Must("admin", "add", "--subject-type", "client", "--subject", "ops-bot")

	// Piped: tab-separated rows under a header line.
	rows := strings.Split(strings.TrimSpace(h.Must("admin", "list")), "\n")
	if len(rows) != 3 || rows[0] != "SUBJECT-TYPE\tSUBJECT\tNOTE\tCREATED\tCREATED-BY" {
		t.Fatalf("list: want a header and 2 rows, got %q", rows)
	}
	rows = rows[1:]
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
	tty := h.RunWith(clitest.Opts{TTY: true}, "admin", "list")
	if first, _, _ := strings.Cut(tty.Out, "\n"); strings.Join(strings.Fields(first), " ") != "SUBJECT-TYPE SUBJECT NOTE CREATED CREATED-BY" {
		t.Errorf("header: got %q", first)
	}

	var doc struct {
		Admins []map[string]any `json:"admins"`
	}
	if err := json.Unmarshal([]byte(h.Must("admin", "list", "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Admins) != 2 || doc.Admins[0]["created_by"] != "test-admin" || doc.Admins[0]["subject_type"] == nil {
		t.Errorf("list -o json: got %v", doc)
	}
	if got := h.Must("admin", "list", "-o", "yaml"); !strings.HasPrefix(got, "admins:\n") || !strings.Contains(got, "subject: alice") {
		t.Errorf("list -o yaml: got %q", got)
	}
	if got := h.Must("admin", "list", "-o", "name"); got != "admin/client:ops-bot\nadmin/user:alice\n" && got != "admin/user:alice\nadmin/client:ops-bot\n" {
		t.Errorf("list -o name: got %q", got)
	}
	if got := h.Must("admin", "add", "--subject-type", "user", "--subject", "bob", "-o", "json"); !strings.Contains(got, `"subject": "bob"`) || !strings.Contains(got, `"created_by": "test-admin"`) {
		t.Errorf("add -o json: got %q", got)
	}

	// remove: refused without --yes when stdin is not a terminal.
	r := h.Run("admin", "remove", "user:alice")
	if r.Code != cmdutil.ExitUsage || !strings.Contains(r.ErrOut, "pass --yes") {
		t.Errorf("remove without --yes: exit %d, stderr %q; want 2 and a hint", r.Code, r.ErrOut)
	}
	if got := h.Must("admin", "list", "-o", "name"); !strings.Contains(got, "user:alice") {
		t.Errorf("alice removed without confirmation: %q", got)
	}
	if got := h.Must("admin", "remove", "user:alice", "--yes"); got != "admin/user:alice removed\n" {
		t.Errorf("remove --yes: got %q", got)
	}
	if got := h.Must("admin", "remove", "--subject-type", "client", "--subject", "ops-bot", "-y"); got != "admin/client:ops-bot removed\n" {
		t.Errorf("remove by flags: got %q", got)
	}
	if got := h.Must("admin", "list", "-o", "name"); got != "admin/user:bob\n" {
		t.Errorf("after removals: got %q", got)
	}
	if got := h.Must("admin", "list", "-o", "json"); !strings.Contains(got, `"admins": [`) {
		t.Errorf("list -o json keeps the envelope: %q", got)
	}
}

func TestRemoveAsksOnTerminal(t *testing.T) {
	h := clitest.StartParallel(t)
	h.Must("admin", "add", "--subject-type", "user", "--subject", "carol")

	r := h.RunWith(clitest.Opts{TTY: true, Stdin: "n\n"}, "admin", "remove", "user:carol")
	if r.Code != cmdutil.ExitError || !strings.Contains(r.ErrOut, "Revoke the administrator privileges of user:carol? [y/N]") {
		t.Errorf("answer n: exit %d, stderr %q; want 1 and the question", r.Code, r.ErrOut)
	}
	if got := h.Must("admin", "list", "-o", "name"); got != "admin/user:carol\n" {
		t.Errorf("carol removed after answering n: %q", got)
	}
	if r := h.RunWith(clitest.Opts{TTY: true, Stdin: "y\n"}, "admin", "remove", "user:carol"); r.Code != 0 || r.Out != "admin/user:carol removed\n" {
		t.Errorf("answer y: exit %d, stdout %q", r.Code, r.Out)
	}
}

func TestExitCodes(t *testing.T) {
	h := clitest.StartParallel(t)
	viewer := h.Env.Token(t, "viewer", "viewer")
	ctx := context.Background()
	if _, err := h.Client().Quarantine(ctx, "user", "mallory", client.QuarantineRequest{Reason: "abuse"}, client.WriteOptions{}); err != nil {
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
		{"quarantined subject", h.Env.AdminToken, []string{"admin", "add", "--subject-type", "user", "--subject", "mallory"}, cmdutil.ExitRefused, "quarantine"},
		{"missing --subject", h.Env.AdminToken, []string{"admin", "add", "--subject-type", "user"}, cmdutil.ExitUsage, "--subject is required"},
		{"missing --subject-type", h.Env.AdminToken, []string{"admin", "add", "--subject", "x"}, cmdutil.ExitUsage, "--subject-type is required"},
		{"targets cannot be admins", h.Env.AdminToken, []string{"admin", "add", "--subject-type", "server", "--subject", "x"}, cmdutil.ExitUsage, "must be one of user, client"},
		{"unknown flag", h.Env.AdminToken, []string{"admin", "add", "--subjet", "x"}, cmdutil.ExitUsage, "unknown flag"},
		{"remove nobody", h.Env.AdminToken, []string{"admin", "remove", "--yes"}, cmdutil.ExitUsage, "say which administrator"},
		{"remove twice over", h.Env.AdminToken, []string{"admin", "remove", "user:a", "--subject-type", "user", "--subject", "a", "--yes"}, cmdutil.ExitUsage, "not both"},
		{"remove malformed", h.Env.AdminToken, []string{"admin", "remove", "alice", "--yes"}, cmdutil.ExitUsage, "want <subject_type>:<subject>"},
		{"remove unknown", h.Env.AdminToken, []string{"admin", "remove", "user:nobody", "--yes"}, cmdutil.ExitNotFound, ""},
		{"list takes no args", h.Env.AdminToken, []string{"admin", "list", "x"}, cmdutil.ExitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.RunWith(clitest.Opts{Token: tt.tok}, tt.args...)
			if r.Code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.Code, tt.code, r.Out, r.ErrOut)
			}
			if !strings.Contains(r.ErrOut, tt.msg) {
				t.Errorf("stderr %q does not mention %q", r.ErrOut, tt.msg)
			}
		})
	}
}

func TestDryRun(t *testing.T) {
	h := clitest.StartParallel(t)
	if got := h.Must("admin", "add", "--subject-type", "user", "--subject", "erin", "--dry-run"); got != "admin/user:erin would be created\n" {
		t.Errorf("add --dry-run: got %q", got)
	}
	if got := h.Must("admin", "list", "-o", "name"); got != "" {
		t.Errorf("dry run stored an admin: %q", got)
	}
}

func TestCompleteAdmins(t *testing.T) {
	h := clitest.StartParallel(t)
	h.Must("admin", "add", "--subject-type", "user", "--subject", "alice", "--note", "lead")
	h.Must("admin", "add", "--subject-type", "client", "--subject", "bot")

	got := h.Must("__complete", "admin", "remove", "us")
	if !strings.Contains(got, "user:alice\tlead\n") || strings.Contains(got, "client:bot") || !strings.Contains(got, ":4\n") {
		t.Errorf("completion of %q: got %q, want user:alice with its note and NoFileComp (:4)", "us", got)
	}
	if got := h.Must("__complete", "admin", "remove", "user:alice", ""); strings.Contains(got, "client:bot") {
		t.Errorf("second argument completed: %q", got)
	}
}

// TestFlags checks flag parsing through runF, with no server.
func TestFlags(t *testing.T) {
	t.Parallel()
	f := clitest.Factory()

	var got *admin.RemoveOptions
	run := func(cmd *cobra.Command, args ...string) error { return clitest.Execute(f, cmd, args...) }
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
