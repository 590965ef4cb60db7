package configcmd_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/config"
	"github.com/rlctl/rlctl/internal/cli/configcmd"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
)

// rlctl runs bare command lines with a private configuration file.
type rlctl struct {
	t      *testing.T
	config string
	env    map[string]string
}

func newRlctl(t *testing.T) *rlctl {
	t.Helper()
	t.Parallel()
	return &rlctl{t: t, config: filepath.Join(t.TempDir(), "rlctl", "config.yaml"), env: map[string]string{}}
}

type result struct {
	code        int
	out, errOut string
}

func (r *rlctl) run(args ...string) result {
	r.t.Helper()
	ios, _, out, errOut := iostreams.Test()
	getenv := func(k string) string {
		if k == "RLCTL_CONFIG" {
			return r.config
		}
		return r.env[k]
	}
	code := cli.Run(context.Background(), args, ios, getenv)
	return result{code, out.String(), errOut.String()}
}

func (r *rlctl) must(args ...string) result {
	r.t.Helper()
	res := r.run(args...)
	if res.code != 0 {
		r.t.Fatalf("rlctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, res.out, res.errOut)
	}
	return res
}

func (r *rlctl) load() *config.Config {
	r.t.Helper()
	c, err := config.Load(r.config)
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

func TestContexts(t *testing.T) {
	r := newRlctl(t)
	tokenFile := filepath.Join(t.TempDir(), "prod.token")
	if err := os.WriteFile(tokenFile, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// An empty configuration.
	if got := r.must("config", "view").out; got != "{}\n" {
		t.Errorf("view of nothing: %q", got)
	}
	if res := r.run("config", "current-context"); res.code != cmdutil.ExitError || !strings.Contains(res.errOut, "no current context") {
		t.Errorf("current-context of nothing: exit %d, %q", res.code, res.errOut)
	}

	res := r.must("config", "set-context", "prod", "--server", "https://rlapi.example.com/", "--token-file", tokenFile)
	if res.out != "" || !strings.Contains(res.errOut, `Created context "prod" in `+r.config) {
		t.Errorf("set-context: stdout %q, stderr %q", res.out, res.errOut)
	}
	fi, err := os.Stat(r.config)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", fi.Mode().Perm())
	}
	if cfg := r.load(); cfg.CurrentContext != "" || cfg.Contexts["prod"].Server != "https://rlapi.example.com" || cfg.Contexts["prod"].TokenFile != tokenFile {
		t.Errorf("stored: %+v %+v", cfg, cfg.Contexts["prod"])
	}

	// A relative token file is stored absolute; a missing one is a warning.
	res = r.must("config", "set-context", "local", "--server", "http://127.0.0.1:8080", "--token-file", "no-such.token", "--use")
	wd, _ := os.Getwd()
	if got := r.load().Contexts["local"].TokenFile; got != filepath.Join(wd, "no-such.token") {
		t.Errorf("relative token file stored as %q", got)
	}
	if !strings.Contains(res.errOut, "Warning: read token file") || !strings.Contains(res.errOut, `Switched to context "local"`) {
		t.Errorf("set-context --use: %q", res.errOut)
	}
	if got := r.must("config", "current-context").out; got != "local\n" {
		t.Errorf("current-context: %q", got)
	}

	want := "contexts:\n" +
		"  local:\n    server: http://127.0.0.1:8080\n    token-file: " + filepath.Join(wd, "no-such.token") + "\n" +
		"  prod:\n    server: https://rlapi.example.com\n    token-file: " + tokenFile + "\n" +
		"current-context: local\n"
	if got := r.must("config", "view").out; got != want {
		t.Errorf("view:\n%s\nwant:\n%s", got, want)
	}
	if got := r.must("config", "view", "-o", "yaml").out; got != want {
		t.Errorf("view -o yaml:\n%s", got)
	}
	var doc struct {
		Current  string                       `json:"current-context"`
		Contexts map[string]map[string]string `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(r.must("config", "view", "-o", "json").out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Current != "local" || doc.Contexts["prod"]["token-file"] != tokenFile {
		t.Errorf("view -o json: %+v", doc)
	}
	if got := r.must("config", "view", "-o", "name").out; got != "context/local\ncontext/prod\n" {
		t.Errorf("view -o name: %q", got)
	}

	r.must("config", "use-context", "prod")
	if got := r.must("config", "current-context").out; got != "prod\n" {
		t.Errorf("after use-context: %q", got)
	}
	res = r.run("config", "use-context", "staging")
	if res.code != cmdutil.ExitUsage || !strings.Contains(res.errOut, `no context "staging"`) || !strings.Contains(res.errOut, "known: local, prod") {
		t.Errorf("use-context unknown: exit %d, %q", res.code, res.errOut)
	}
	if got := r.must("config", "current-context").out; got != "prod\n" {
		t.Errorf("a failed use-context changed the current context: %q", got)
	}

	// Replacing a context keeps the others.
	res = r.must("config", "set-context", "local", "--server", "http://127.0.0.1:9090")
	if !strings.Contains(res.errOut, `Replaced context "local"`) {
		t.Errorf("replace: %q", res.errOut)
	}
	if cfg := r.load(); cfg.Contexts["local"].TokenFile != "" || cfg.Contexts["local"].Server != "http://127.0.0.1:9090" || cfg.CurrentContext != "prod" {
		t.Errorf("after replace: %+v", cfg)
	}

	res = r.must("config", "delete-context", "prod")
	if !strings.Contains(res.errOut, "It was the current context") {
		t.Errorf("delete current: %q", res.errOut)
	}
	if cfg := r.load(); cfg.CurrentContext != "" || cfg.Contexts["prod"] != nil || cfg.Contexts["local"] == nil {
		t.Errorf("after delete: %+v", cfg)
	}
	if res := r.run("config", "delete-context", "prod"); res.code != cmdutil.ExitUsage {
		t.Errorf("delete unknown: exit %d", res.code)
	}
}

func TestUsageErrors(t *testing.T) {
	r := newRlctl(t)
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no server", []string{"config", "set-context", "x"}, "--server is required"},
		{"empty server", []string{"config", "set-context", "x", "--server", ""}, "--server is required"},
		{"bad server", []string{"config", "set-context", "x", "--server", "rlapi.example.com"}, "--server"},
		{"no name", []string{"config", "set-context", "--server", "http://x"}, "accepts 1 arg"},
		{"name with a space", []string{"config", "set-context", "a b", "--server", "http://x"}, "without spaces"},
		{"use nothing", []string{"config", "use-context"}, "accepts 1 arg"},
		{"use unknown", []string{"config", "use-context", "nope"}, "there are none"},
		{"delete unknown", []string{"config", "delete-context", "nope"}, `no context "nope"`},
		{"view with args", []string{"config", "view", "x"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.run(tt.args...)
			if res.code != cmdutil.ExitUsage || !strings.Contains(res.errOut, tt.msg) {
				t.Errorf("exit %d (want 2), stderr %q (want %q)", res.code, res.errOut, tt.msg)
			}
		})
	}
	if _, err := os.Stat(r.config); !os.IsNotExist(err) {
		t.Errorf("a failed command wrote the configuration: %v", err)
	}
}

// TestContextIsUsed is what `make run` relies on: after set-context --use,
// plain commands reach the server with the context's token.
func TestContextIsUsed(t *testing.T) {
	r := newRlctl(t)
	env := apitest.Start(t, api.Config{})
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(tokenFile, []byte(env.AdminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.run("rate-limit", "list"); res.code == 0 {
		t.Fatal("rate-limit list worked without any context (is something serving the default address?)")
	}
	r.must("config", "set-context", "local", "--server", env.URL, "--token-file", tokenFile, "--use")
	if got := r.must("rate-limit", "list", "-o", "name").out; !strings.Contains(got, "definition/quarantine:group:quarantine-callers:1") {
		t.Errorf("rate-limit list through the context: %q", got)
	}
	// Another context, selected per command with --context or RLCTL_CONTEXT.
	r.must("config", "set-context", "dead", "--server", "http://127.0.0.1:1", "--token-file", tokenFile, "--use")
	r.must("--context", "local", "rate-limit", "list")
	r.env["RLCTL_CONTEXT"] = "local"
	r.must("rate-limit", "list")
}

func TestCompleteContexts(t *testing.T) {
	r := newRlctl(t)
	r.must("config", "set-context", "prod", "--server", "https://rlapi.example.com")
	r.must("config", "set-context", "local", "--server", "http://127.0.0.1:8080")
	got := r.must("__complete", "config", "use-context", "p").out
	if !strings.Contains(got, "prod\thttps://rlapi.example.com\n") || strings.Contains(got, "local") || !strings.HasSuffix(got, ":4\n") {
		t.Errorf("completion: %q", got)
	}
}

// TestFlags checks flag parsing through runF, writing nothing.
func TestFlags(t *testing.T) {
	t.Parallel()
	ios, _, _, _ := iostreams.Test()
	f := cmdutil.NewFactory(ios, func(string) string { return "" })
	var got *configcmd.SetContextOptions
	cmd := configcmd.NewCmdSetContext(f, func(o *configcmd.SetContextOptions) error { got = o; return nil })
	exec := func(cmd *cobra.Command, args ...string) error {
		cmd.SetArgs(args)
		cmd.SetOut(ios.Out)
		cmd.SetErr(ios.ErrOut)
		return cmd.Execute()
	}
	if err := exec(cmd, "prod", "--server", "https://x.example", "--token-file", "tok", "--use"); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if got.Name != "prod" || got.Server != "https://x.example" || got.TokenFile != filepath.Join(wd, "tok") || !got.Use {
		t.Errorf("set-context: %+v", *got)
	}
	home, err := os.UserHomeDir()
	if err == nil {
		cmd = configcmd.NewCmdSetContext(f, func(o *configcmd.SetContextOptions) error { got = o; return nil })
		if err := exec(cmd, "prod", "--server", "https://x.example", "--token-file", "~/t"); err != nil {
			t.Fatal(err)
		}
		if got.TokenFile != filepath.Join(home, "t") {
			t.Errorf("~ not expanded: %q", got.TokenFile)
		}
	}
}
