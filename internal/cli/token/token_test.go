package token_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/internal/cli/token"
	itoken "github.com/rlctl/rlctl/internal/token"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
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

// works reports whether tok authenticates (a read any role but enforcer may do).
func (h *harness) works(tok string) int {
	h.t.Helper()
	return h.run(tok, false, "", "rate-limit", "list").code
}

func TestCreatePrintsTheSecretOnce(t *testing.T) {
	h := start(t)
	r := h.admin("token", "create", "--name", "grafana", "--role", "viewer")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	secret := strings.TrimSuffix(r.out, "\n")
	if secret == "" || strings.ContainsAny(secret, " \n") {
		t.Fatalf("stdout should be the secret alone, got %q", r.out)
	}
	if !strings.Contains(r.errOut, `Created viewer token "grafana" (never expires)`) || !strings.Contains(r.errOut, "not shown again") || strings.Contains(r.errOut, secret) {
		t.Errorf("stderr: %q", r.errOut)
	}
	if code := h.works(secret); code != 0 {
		t.Errorf("the new viewer token does not work: exit %d", code)
	}
	if r := h.run(secret, false, "", "token", "create", "--name", "x", "--role", "admin"); r.code != cmdutil.ExitAuth {
		t.Errorf("a viewer created a token: exit %d", r.code)
	}
	// The list never shows it again.
	if got := h.must("token", "list", "-o", "json"); strings.Contains(got, secret) {
		t.Error("token list shows the secret")
	}
}

func TestCreateJSON(t *testing.T) {
	h := start(t)
	var got map[string]any
	if err := json.Unmarshal([]byte(h.must("token", "create", "--name", "ci", "--role", "admin", "--expires-in", "720h", "-o", "json")), &got); err != nil {
		t.Fatal(err)
	}
	if got["name"] != "ci" || got["role"] != "admin" || got["token"] == "" || got["expires_at"] == nil || got["created_at"] == nil {
		t.Errorf("create -o json: got %v", got)
	}
	expires, err := time.Parse(time.RFC3339, got["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(expires); d < 719*time.Hour || d > 721*time.Hour {
		t.Errorf("expires in %s, want 720h", d)
	}
}

func TestCreateOutputFile(t *testing.T) {
	h := start(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "ci.token")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.admin("token", "create", "--name", "ci", "--role", "enforcer", "--output-file", path)
	if r.code != 0 || r.out != "" {
		t.Fatalf("exit %d, stdout %q (want nothing on stdout), stderr %q", r.code, r.out, r.errOut)
	}
	if !strings.Contains(r.errOut, "written to "+path) {
		t.Errorf("stderr should say where: %q", r.errOut)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	secret := strings.TrimSpace(string(b))
	if secret == "old" || secret == "" {
		t.Fatalf("file not replaced: %q", b)
	}
	// An enforcer may not list definitions, but it authenticates: 403, not 401.
	if code := h.works(secret); code != cmdutil.ExitAuth {
		t.Errorf("enforcer token: exit %d", code)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	// A directory that does not exist fails before any token is made.
	r = h.admin("token", "create", "--name", "lost", "--role", "admin", "--output-file", filepath.Join(dir, "no", "such", "file"))
	if r.code == 0 {
		t.Fatal("create into a missing directory succeeded")
	}
	if got := h.must("token", "list", "-o", "name"); strings.Contains(got, "token/lost") {
		t.Errorf("a token was made though its file could not be: %q", got)
	}
}

func TestListStates(t *testing.T) {
	h := start(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	_, sum := itoken.New()
	if _, err := h.env.Store.CreateToken(ctx, "old", rl.RoleViewer, sum, &past); err != nil {
		t.Fatal(err)
	}
	h.env.Token(t, "gone", rl.RoleViewer)
	h.must("token", "revoke", "gone", "--yes")
	h.must("token", "create", "--name", "fresh", "--role", "enforcer", "--expires-in", "1h")

	state := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(h.must("token", "list")), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 6 {
			t.Fatalf("want NAME ROLE CREATED EXPIRES LAST-USED STATE, got %q", line)
		}
		state[f[0]] = f
	}
	checks := []struct {
		name, role, state string
		expires, lastUsed bool
	}{
		{"test-admin", "admin", "active", false, true},
		{"old", "viewer", "expired", true, false},
		{"gone", "viewer", "revoked", false, false},
		{"fresh", "enforcer", "active", true, false},
	}
	for _, c := range checks {
		f, ok := state[c.name]
		if !ok {
			t.Errorf("%s not listed", c.name)
			continue
		}
		if f[1] != c.role || f[5] != c.state || (f[3] != "-") != c.expires || (f[4] != "-") != c.lastUsed {
			t.Errorf("%s: got %q, want role %s, state %s, expires %v, last used %v", c.name, f, c.role, c.state, c.expires, c.lastUsed)
		}
	}

	tty := h.run(h.env.AdminToken, true, "", "token", "list")
	if first, _, _ := strings.Cut(tty.out, "\n"); strings.Join(strings.Fields(first), " ") != "NAME ROLE CREATED EXPIRES LAST-USED STATE" {
		t.Errorf("header: %q", first)
	}
	var doc struct {
		Tokens []map[string]any `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(h.must("token", "list", "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tokens) != 4 {
		t.Errorf("list -o json: %d tokens, want 4", len(doc.Tokens))
	}
	for _, tok := range doc.Tokens {
		if tok["name"] == "gone" && tok["revoked_at"] == nil {
			t.Errorf("revoked token without revoked_at: %v", tok)
		}
	}
	if got := h.must("token", "list", "-o", "yaml"); !strings.HasPrefix(got, "tokens:\n") {
		t.Errorf("list -o yaml: %q", got)
	}
}

func TestRevoke(t *testing.T) {
	h := start(t)
	secret := strings.TrimSpace(h.must("token", "create", "--name", "ci", "--role", "viewer"))

	r := h.admin("token", "revoke", "ci")
	if r.code != cmdutil.ExitUsage || !strings.Contains(r.errOut, "pass --yes") {
		t.Errorf("revoke without --yes: exit %d, stderr %q", r.code, r.errOut)
	}
	if code := h.works(secret); code != 0 {
		t.Fatalf("token stopped working without confirmation: exit %d", code)
	}
	r = h.run(h.env.AdminToken, true, "no\n", "token", "revoke", "ci")
	if r.code != cmdutil.ExitError || !strings.Contains(r.errOut, "Revoke token ci? [y/N]") {
		t.Errorf("answer no: exit %d, stderr %q", r.code, r.errOut)
	}
	if got := h.must("token", "revoke", "ci", "--yes"); got != "token/ci revoked\n" {
		t.Errorf("revoke: got %q", got)
	}
	if code := h.works(secret); code != cmdutil.ExitAuth {
		t.Errorf("revoked token still works: exit %d", code)
	}
	h.must("token", "create", "--name", "ci2", "--role", "viewer")
	if got := h.must("token", "revoke", "ci2", "-y", "-o", "json"); !strings.Contains(got, `"revoked": true`) {
		t.Errorf("revoke -o json: %q", got)
	}
}

func TestExitCodes(t *testing.T) {
	h := start(t)
	viewer := h.env.Token(t, "viewer", "viewer")
	h.must("token", "create", "--name", "dup", "--role", "viewer")
	tests := []struct {
		name string
		tok  string
		args []string
		code int
		msg  string
	}{
		{"revoke unknown", h.env.AdminToken, []string{"token", "revoke", "nope", "--yes"}, cmdutil.ExitNotFound, "nope"},
		{"viewer may not list", viewer, []string{"token", "list"}, cmdutil.ExitAuth, ""},
		{"viewer may not revoke", viewer, []string{"token", "revoke", "dup", "--yes"}, cmdutil.ExitAuth, ""},
		{"missing --role", h.env.AdminToken, []string{"token", "create", "--name", "x"}, cmdutil.ExitUsage, "--role is required"},
		{"missing --name", h.env.AdminToken, []string{"token", "create", "--role", "admin"}, cmdutil.ExitUsage, "--name is required"},
		{"bad role", h.env.AdminToken, []string{"token", "create", "--name", "x", "--role", "root"}, cmdutil.ExitUsage, "admin, viewer, enforcer"},
		{"bad expiry", h.env.AdminToken, []string{"token", "create", "--name", "x", "--role", "admin", "--expires-in", "10ms"}, cmdutil.ExitUsage, "at least 1s"},
		{"bad duration", h.env.AdminToken, []string{"token", "create", "--name", "x", "--role", "admin", "--expires-in", "soon"}, cmdutil.ExitUsage, ""},
		{"duplicate name", h.env.AdminToken, []string{"token", "create", "--name", "dup", "--role", "admin"}, cmdutil.ExitRefused, ""},
		{"revoke needs a name", h.env.AdminToken, []string{"token", "revoke", "--yes"}, cmdutil.ExitUsage, ""},
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

func TestCompleteTokenNames(t *testing.T) {
	h := start(t)
	h.must("token", "create", "--name", "ci-deploy", "--role", "admin")
	h.must("token", "create", "--name", "ci-old", "--role", "viewer")
	h.must("token", "revoke", "ci-old", "--yes")

	got := h.must("__complete", "token", "revoke", "ci")
	if !strings.Contains(got, "ci-deploy\tadmin\n") || strings.Contains(got, "ci-old") || !strings.HasSuffix(got, ":4\n") {
		t.Errorf("completion: got %q, want ci-deploy only, with NoFileComp (:4)", got)
	}
	// An unreachable server fails the completion quickly, not the shell.
	ios, _, out, _ := iostreams.Test()
	start := time.Now()
	cli.Run(context.Background(), []string{"--server", "http://127.0.0.1:1", "--token", "x", "__complete", "token", "revoke", ""}, ios,
		func(k string) string {
			if k == "RLCTL_CONFIG" {
				return h.config
			}
			return ""
		})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("completion against a dead server took %s", d)
	}
	if !strings.Contains(out.String(), ":5\n") && !strings.Contains(out.String(), ":4\n") {
		t.Errorf("completion against a dead server: %q", out.String())
	}
}

// TestFlags checks flag parsing through runF, with no server.
func TestFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.NewFactory(ios, func(string) string { return "" })
	exec := func(cmd *cobra.Command, args ...string) error {
		cmd.SetArgs(args)
		cmd.SetOut(ios.Out)
		cmd.SetErr(ios.ErrOut)
		return cmd.Execute()
	}
	var c *token.CreateOptions
	if err := exec(token.NewCmdCreate(f, func(o *token.CreateOptions) error { c = o; return nil }),
		"--name", "ci", "--role", "enforcer", "--expires-in", "2h", "--output-file", "x"); err != nil {
		t.Fatal(err)
	}
	if c.Name != "ci" || c.Role != "enforcer" || c.ExpiresIn != 2*time.Hour || c.OutputFile != "x" {
		t.Errorf("create: got %+v", *c)
	}
	var r *token.RevokeOptions
	if err := exec(token.NewCmdRevoke(f, func(o *token.RevokeOptions) error { r = o; return nil }), "ci", "-y"); err != nil {
		t.Fatal(err)
	}
	if r.Name != "ci" || !r.Yes {
		t.Errorf("revoke: got %+v", *r)
	}
}

func TestState(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Second)
	tests := []struct {
		tok  rl.Token
		want string
	}{
		{rl.Token{}, token.StateActive},
		{rl.Token{ExpiresAt: &future}, token.StateActive},
		{rl.Token{ExpiresAt: &now}, token.StateExpired},
		{rl.Token{ExpiresAt: &past}, token.StateExpired},
		{rl.Token{ExpiresAt: &past, RevokedAt: &past}, token.StateRevoked},
		{rl.Token{RevokedAt: &past}, token.StateRevoked},
	}
	for _, tt := range tests {
		if got := token.State(tt.tok, now); got != tt.want {
			t.Errorf("State(%+v) = %s, want %s", tt.tok, got, tt.want)
		}
	}
}
