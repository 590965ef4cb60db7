package configcmd_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/config"
	"github.com/rlctl/rlctl/internal/cli/configcmd"
)

// newRlctl runs the test in parallel, with a configuration file of its own
// in a directory that does not exist yet.
func newRlctl(t *testing.T) *clitest.Rlctl {
	t.Helper()
	t.Parallel()
	r := clitest.New(t)
	r.Config = filepath.Join(t.TempDir(), "rlctl", "config.yaml")
	return r
}

// load reads the configuration file.
func load(r *clitest.Rlctl) *config.Config {
	r.T.Helper()
	c, err := config.Load(r.Config)
	if err != nil {
		r.T.Fatal(err)
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
	if got := r.Must("config", "view"); got != "{}\n" {
		t.Errorf("view of nothing: %q", got)
	}
	if res := r.Run("config", "current-context"); res.Code != cmdutil.ExitError || !strings.Contains(res.ErrOut, "no current context") {
		t.Errorf("current-context of nothing: exit %d, %q", res.Code, res.ErrOut)
	}

	res := r.MustWith(clitest.Opts{}, "config", "set-context", "prod", "--server", "https://rlapi.example.com/", "--token-file", tokenFile)
	if res.Out != "" || !strings.Contains(res.ErrOut, `Created context "prod" in `+r.Config) {
		t.Errorf("set-context: stdout %q, stderr %q", res.Out, res.ErrOut)
	}
	fi, err := os.Stat(r.Config)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v, want 0600", fi.Mode().Perm())
	}
	if cfg := load(r); cfg.CurrentContext != "" || cfg.Contexts["prod"].Server != "https://rlapi.example.com" || cfg.Contexts["prod"].TokenFile != tokenFile {
		t.Errorf("stored: %+v %+v", cfg, cfg.Contexts["prod"])
	}

	// A relative token file is stored absolute; a missing one is a warning.
	res = r.MustWith(clitest.Opts{}, "config", "set-context", "local", "--server", "http://127.0.0.1:8080", "--token-file", "no-such.token", "--use")
	wd, _ := os.Getwd()
	if got := load(r).Contexts["local"].TokenFile; got != filepath.Join(wd, "no-such.token") {
		t.Errorf("relative token file stored as %q", got)
	}
	if !strings.Contains(res.ErrOut, "Warning: read token file") || !strings.Contains(res.ErrOut, `Switched to context "local"`) {
		t.Errorf("set-context --use: %q", res.ErrOut)
	}
	if got := r.Must("config", "current-context"); got != "local\n" {
		t.Errorf("current-context: %q", got)
	}

	want := "current-context: local\n" +
		"contexts:\n" +
		"  local:\n    server: http://127.0.0.1:8080\n    token-file: " + filepath.Join(wd, "no-such.token") + "\n" +
		"  prod:\n    server: https://rlapi.example.com\n    token-file: " + tokenFile + "\n"
	if got := r.Must("config", "view"); got != want {
		t.Errorf("view:\n%s\nwant:\n%s", got, want)
	}
	if got := r.Must("config", "view", "-o", "yaml"); got != want {
		t.Errorf("view -o yaml:\n%s", got)
	}
	var doc struct {
		Current  string                       `json:"current-context"`
		Contexts map[string]map[string]string `json:"contexts"`
	}
	if err := json.Unmarshal([]byte(r.Must("config", "view", "-o", "json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Current != "local" || doc.Contexts["prod"]["token-file"] != tokenFile {
		t.Errorf("view -o json: %+v", doc)
	}
	if got := r.Must("config", "view", "-o", "name"); got != "context/local\ncontext/prod\n" {
		t.Errorf("view -o name: %q", got)
	}

	r.Must("config", "use-context", "prod")
	if got := r.Must("config", "current-context"); got != "prod\n" {
		t.Errorf("after use-context: %q", got)
	}
	res = r.Run("config", "use-context", "staging")
	if res.Code != cmdutil.ExitUsage || !strings.Contains(res.ErrOut, `no context "staging"`) || !strings.Contains(res.ErrOut, "known: local, prod") {
		t.Errorf("use-context unknown: exit %d, %q", res.Code, res.ErrOut)
	}
	if got := r.Must("config", "current-context"); got != "prod\n" {
		t.Errorf("a failed use-context changed the current context: %q", got)
	}

	// Replacing a context keeps the others.
	res = r.MustWith(clitest.Opts{}, "config", "set-context", "local", "--server", "http://127.0.0.1:9090")
	if !strings.Contains(res.ErrOut, `Replaced context "local"`) {
		t.Errorf("replace: %q", res.ErrOut)
	}
	if cfg := load(r); cfg.Contexts["local"].TokenFile != "" || cfg.Contexts["local"].Server != "http://127.0.0.1:9090" || cfg.CurrentContext != "prod" {
		t.Errorf("after replace: %+v", cfg)
	}

	res = r.MustWith(clitest.Opts{}, "config", "delete-context", "prod")
	if !strings.Contains(res.ErrOut, "It was the current context") {
		t.Errorf("delete current: %q", res.ErrOut)
	}
	if cfg := load(r); cfg.CurrentContext != "" || cfg.Contexts["prod"] != nil || cfg.Contexts["local"] == nil {
		t.Errorf("after delete: %+v", cfg)
	}
	if res := r.Run("config", "delete-context", "prod"); res.Code != cmdutil.ExitUsage {
		t.Errorf("delete unknown: exit %d", res.Code)
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
		{"no name", []string{"config", "set-context", "--server", "http://x"}, "rlctl config set-context takes 1 argument (got 0)"},
		{"name with a space", []string{"config", "set-context", "a b", "--server", "http://x"}, "without spaces"},
		{"use nothing", []string{"config", "use-context"}, "rlctl config use-context takes 1 argument (got 0)"},
		{"use unknown", []string{"config", "use-context", "nope"}, "there are none"},
		{"delete unknown", []string{"config", "delete-context", "nope"}, `no context "nope"`},
		{"view with args", []string{"config", "view", "x"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := r.Run(tt.args...)
			if res.Code != cmdutil.ExitUsage || !strings.Contains(res.ErrOut, tt.msg) {
				t.Errorf("exit %d (want 2), stderr %q (want %q)", res.Code, res.ErrOut, tt.msg)
			}
		})
	}
	if _, err := os.Stat(r.Config); !os.IsNotExist(err) {
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
	if res := r.Run("rate-limit", "list"); res.Code == 0 {
		t.Fatal("rate-limit list worked without any context (is something serving the default address?)")
	}
	r.Must("config", "set-context", "local", "--server", env.URL, "--token-file", tokenFile, "--use")
	if got := r.Must("rate-limit", "list", "-o", "name"); !strings.Contains(got, "definition/quarantine:group:quarantine-callers:1") {
		t.Errorf("rate-limit list through the context: %q", got)
	}
	// Another context, selected per command with --context or RLCTL_CONTEXT.
	r.Must("config", "set-context", "dead", "--server", "http://127.0.0.1:1", "--token-file", tokenFile, "--use")
	r.Must("--context", "local", "rate-limit", "list")
	r.Environ["RLCTL_CONTEXT"] = "local"
	r.Must("rate-limit", "list")
}

func TestCompleteContexts(t *testing.T) {
	r := newRlctl(t)
	r.Must("config", "set-context", "prod", "--server", "https://rlapi.example.com")
	r.Must("config", "set-context", "local", "--server", "http://127.0.0.1:8080")
	got := r.Must("__complete", "config", "use-context", "p")
	if !strings.Contains(got, "prod\thttps://rlapi.example.com\n") || strings.Contains(got, "local") || !strings.HasSuffix(got, ":4\n") {
		t.Errorf("completion: %q", got)
	}
}

// TestFlags checks flag parsing through runF, writing nothing.
func TestFlags(t *testing.T) {
	t.Parallel()
	f := clitest.Factory()
	var got *configcmd.SetContextOptions
	cmd := configcmd.NewCmdSetContext(f, func(o *configcmd.SetContextOptions) error { got = o; return nil })
	exec := func(cmd *cobra.Command, args ...string) error { return clitest.Execute(f, cmd, args...) }
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

// TestMakeRunContextPerCheckout: `make run` (scripts/run.sh) names its
// context after the checkout, so two checkouts, even of the same directory
// name, write two contexts instead of overwriting one named local.
func TestMakeRunContextPerCheckout(t *testing.T) {
	r := newRlctl(t)
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	name := func(checkout string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", `source scripts/run.sh && context_name "$1"`, "bash", checkout)
		cmd.Dir = root
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("context_name %s: %v", checkout, err)
		}
		return strings.TrimSpace(string(out))
	}
	a, b := name("/home/ann/src/rlctl"), name("/home/ann/work/rlctl")
	if a == b || !strings.HasPrefix(a, "local-rlctl-") || !strings.HasPrefix(b, "local-rlctl-") {
		t.Fatalf("context names %q and %q: want two names local-rlctl-<hash>", a, b)
	}
	if again := name("/home/ann/src/rlctl"); again != a {
		t.Errorf("the same checkout named %q, then %q", a, again)
	}
	for _, ctx := range []string{a, b} {
		r.MustWith(clitest.Opts{}, "config", "set-context", ctx, "--server", "http://127.0.0.1:8080", "--token-file", "/nonexistent/"+ctx)
	}
	if cfg := load(r); cfg.Contexts[a] == nil || cfg.Contexts[b] == nil {
		t.Errorf("contexts after two checkouts: %v", cfg.Contexts)
	}
}
