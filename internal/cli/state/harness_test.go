package state_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/pkg/client"
)

// rlctl runs command lines against one real rlapi (as internal/cli's
// tests do).
type rlctl struct {
	t      testing.TB
	env    *apitest.Env
	config string
}

func newRlctl(t testing.TB) *rlctl {
	t.Helper()
	env := apitest.Start(t, api.Config{})
	return &rlctl{t: t, env: env, config: filepath.Join(t.TempDir(), "config.yaml")}
}

type result struct {
	code        int
	out, errOut string
}

// opts tune one run: a terminal on stdin and stdout, and input.
type opts struct {
	tty   bool
	stdin string
}

func (r *rlctl) run(args ...string) result {
	r.t.Helper()
	return r.runWith(opts{}, args...)
}

func (r *rlctl) runWith(o opts, args ...string) result {
	r.t.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(o.stdin)
	ios.SetStdoutTTY(o.tty)
	ios.SetStdinTTY(o.tty)
	getenv := func(k string) string {
		if k == "RLCTL_CONFIG" {
			return r.config
		}
		return ""
	}
	full := append([]string{"--server", r.env.URL, "--token", r.env.AdminToken}, args...)
	code := cli.Run(context.Background(), full, ios, getenv)
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

// must runs a command that has to succeed and returns its stdout.
func (r *rlctl) must(args ...string) string {
	r.t.Helper()
	res := r.run(args...)
	if res.code != 0 {
		r.t.Fatalf("rlctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, res.out, res.errOut)
	}
	return res.out
}

// expect runs a command, fails the test unless it exits with code, and
// returns the result.
func (r *rlctl) expect(code int, args ...string) result {
	r.t.Helper()
	res := r.run(args...)
	if res.code != code {
		r.t.Fatalf("rlctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, code, res.out, res.errOut)
	}
	return res
}

// client is an SDK client for setting up state the way other tools would.
func (r *rlctl) client() *client.Client {
	r.t.Helper()
	c, err := client.New(r.env.URL, client.Options{Token: r.env.AdminToken, Timeout: time.Minute})
	if err != nil {
		r.t.Fatal(err)
	}
	return c
}

// writeFile writes content to name under dir (created if needed) and
// returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr(n int) *int { return &n }
