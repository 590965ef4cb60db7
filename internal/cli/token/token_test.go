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

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/token"
	itoken "github.com/rlctl/rlctl/internal/token"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// works reports whether tok authenticates (a read any role but enforcer may do).
func works(h *clitest.Rlctl, tok string) int {
	h.T.Helper()
	return h.RunWith(clitest.Opts{Token: tok}, "rate-limit", "list").Code
}

func TestCreatePrintsTheSecretOnce(t *testing.T) {
	h := clitest.StartParallel(t)
	r := h.Run("token", "create", "--name", "grafana", "--role", "viewer")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.ErrOut)
	}
	secret := strings.TrimSuffix(r.Out, "\n")
	if secret == "" || strings.ContainsAny(secret, " \n") {
		t.Fatalf("stdout should be the secret alone, got %q", r.Out)
	}
	if !strings.Contains(r.ErrOut, `Created viewer token "grafana" (never expires)`) || !strings.Contains(r.ErrOut, "not shown again") || strings.Contains(r.ErrOut, secret) {
		t.Errorf("stderr: %q", r.ErrOut)
	}
	if code := works(h, secret); code != 0 {
		t.Errorf("the new viewer token does not work: exit %d", code)
	}
	if r := h.RunWith(clitest.Opts{Token: secret}, "token", "create", "--name", "x", "--role", "admin"); r.Code != cmdutil.ExitAuth {
		t.Errorf("a viewer created a token: exit %d", r.Code)
	}
	// The list never shows it again.
	if got := h.Must("token", "list", "-o", "json"); strings.Contains(got, secret) {
		t.Error("token list shows the secret")
	}
}

func TestCreateJSON(t *testing.T) {
	h := clitest.StartParallel(t)
	var got map[string]any
	if err := json.Unmarshal([]byte(h.Must("token", "create", "--name", "ci", "--role", "admin", "--expires-in", "720h", "-o", "json")), &got); err != nil {
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
	h := clitest.StartParallel(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "ci.token")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := h.Run("token", "create", "--name", "ci", "--role", "enforcer", "--output-file", path)
	if r.Code != 0 || r.Out != "" {
		t.Fatalf("exit %d, stdout %q (want nothing on stdout), stderr %q", r.Code, r.Out, r.ErrOut)
	}
	if !strings.Contains(r.ErrOut, "written to "+path) {
		t.Errorf("stderr should say where: %q", r.ErrOut)
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
	if code := works(h, secret); code != cmdutil.ExitAuth {
		t.Errorf("enforcer token: exit %d", code)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	// A directory that does not exist fails before any token is made.
	r = h.Run("token", "create", "--name", "lost", "--role", "admin", "--output-file", filepath.Join(dir, "no", "such", "file"))
	if r.Code == 0 {
		t.Fatal("create into a missing directory succeeded")
	}
	if got := h.Must("token", "list", "-o", "name"); strings.Contains(got, "token/lost") {
		t.Errorf("a token was made though its file could not be: %q", got)
	}
}

func TestListStates(t *testing.T) {
	h := clitest.StartParallel(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	_, sum := itoken.New()
	if _, err := h.Env.Store.CreateToken(ctx, "old", rl.RoleViewer, sum, &past); err != nil {
		t.Fatal(err)
	}
	h.Env.Token(t, "gone", rl.RoleViewer)
	h.Must("token", "revoke", "gone", "--yes")
	h.Must("token", "create", "--name", "fresh", "--role", "enforcer", "--expires-in", "1h")
	// rlapi records a token's use in the background (never delaying the
	// request): wait for the admin token's, as a user listing again would.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		tokens, err := h.Env.Store.ListTokens(ctx)
		if err != nil {
			t.Fatal(err)
		}
		used := false
		for _, tok := range tokens {
			used = used || (tok.Name == "test-admin" && tok.LastUsedAt != nil)
		}
		if used {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the admin token's use was never recorded")
		}
	}

	state := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(h.Must("token", "list")), "\n") {
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

	tty := h.RunWith(clitest.Opts{TTY: true}, "token", "list")
	if first, _, _ := strings.Cut(tty.Out, "\n"); strings.Join(strings.Fields(first), " ") != "NAME ROLE CREATED EXPIRES LAST-USED STATE" {
		t.Errorf("header: %q", first)
	}
	var doc struct {
		Tokens []map[string]any `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(h.Must("token", "list", "-o", "json")), &doc); err != nil {
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
	if got := h.Must("token", "list", "-o", "yaml"); !strings.HasPrefix(got, "tokens:\n") {
		t.Errorf("list -o yaml: %q", got)
	}
}

func TestRevoke(t *testing.T) {
	h := clitest.StartParallel(t)
	secret := strings.TrimSpace(h.Must("token", "create", "--name", "ci", "--role", "viewer"))

	r := h.Run("token", "revoke", "ci")
	if r.Code != cmdutil.ExitUsage || !strings.Contains(r.ErrOut, "pass --yes") {
		t.Errorf("revoke without --yes: exit %d, stderr %q", r.Code, r.ErrOut)
	}
	if code := works(h, secret); code != 0 {
		t.Fatalf("token stopped working without confirmation: exit %d", code)
	}
	r = h.RunWith(clitest.Opts{TTY: true, Stdin: "no\n"}, "token", "revoke", "ci")
	if r.Code != cmdutil.ExitError || !strings.Contains(r.ErrOut, "Revoke token ci? [y/N]") {
		t.Errorf("answer no: exit %d, stderr %q", r.Code, r.ErrOut)
	}
	if got := h.Must("token", "revoke", "ci", "--yes"); got != "token/ci revoked\n" {
		t.Errorf("revoke: got %q", got)
	}
	if code := works(h, secret); code != cmdutil.ExitAuth {
		t.Errorf("revoked token still works: exit %d", code)
	}
	h.Must("token", "create", "--name", "ci2", "--role", "viewer")
	if got := h.Must("token", "revoke", "ci2", "-y", "-o", "json"); !strings.Contains(got, `"revoked": true`) {
		t.Errorf("revoke -o json: %q", got)
	}
}

func TestExitCodes(t *testing.T) {
	h := clitest.StartParallel(t)
	viewer := h.Env.Token(t, "viewer", "viewer")
	h.Must("token", "create", "--name", "dup", "--role", "viewer")
	tests := []struct {
		name string
		tok  string
		args []string
		code int
		msg  string
	}{
		{"revoke unknown", h.Env.AdminToken, []string{"token", "revoke", "nope", "--yes"}, cmdutil.ExitNotFound, "nope"},
		{"viewer may not list", viewer, []string{"token", "list"}, cmdutil.ExitAuth, ""},
		{"viewer may not revoke", viewer, []string{"token", "revoke", "dup", "--yes"}, cmdutil.ExitAuth, ""},
		{"missing --role", h.Env.AdminToken, []string{"token", "create", "--name", "x"}, cmdutil.ExitUsage, "--role is required"},
		{"missing --name", h.Env.AdminToken, []string{"token", "create", "--role", "admin"}, cmdutil.ExitUsage, "--name is required"},
		{"bad role", h.Env.AdminToken, []string{"token", "create", "--name", "x", "--role", "root"}, cmdutil.ExitUsage, "admin, viewer, enforcer"},
		{"bad expiry", h.Env.AdminToken, []string{"token", "create", "--name", "x", "--role", "admin", "--expires-in", "10ms"}, cmdutil.ExitUsage, "at least 1s"},
		{"bad duration", h.Env.AdminToken, []string{"token", "create", "--name", "x", "--role", "admin", "--expires-in", "soon"}, cmdutil.ExitUsage, ""},
		{"duplicate name", h.Env.AdminToken, []string{"token", "create", "--name", "dup", "--role", "admin"}, cmdutil.ExitRefused, ""},
		{"revoke needs a name", h.Env.AdminToken, []string{"token", "revoke", "--yes"}, cmdutil.ExitUsage, ""},
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

func TestCompleteTokenNames(t *testing.T) {
	h := clitest.StartParallel(t)
	h.Must("token", "create", "--name", "ci-deploy", "--role", "admin")
	h.Must("token", "create", "--name", "ci-old", "--role", "viewer")
	h.Must("token", "revoke", "ci-old", "--yes")

	got := h.Must("__complete", "token", "revoke", "ci")
	if !strings.Contains(got, "ci-deploy\tadmin\n") || strings.Contains(got, "ci-old") || !strings.HasSuffix(got, ":4\n") {
		t.Errorf("completion: got %q, want ci-deploy only, with NoFileComp (:4)", got)
	}
	// An unreachable server fails the completion quickly, not the shell.
	start := time.Now()
	r := h.RunWith(clitest.Opts{Bare: true}, "--server", "http://127.0.0.1:1", "--token", "x", "__complete", "token", "revoke", "")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("completion against a dead server took %s", d)
	}
	if !strings.Contains(r.Out, ":5\n") && !strings.Contains(r.Out, ":4\n") {
		t.Errorf("completion against a dead server: %q", r.Out)
	}
}

// TestFlags checks flag parsing through runF, with no server.
func TestFlags(t *testing.T) {
	t.Parallel()
	f := clitest.Factory()
	exec := func(cmd *cobra.Command, args ...string) error { return clitest.Execute(f, cmd, args...) }
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
