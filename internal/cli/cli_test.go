package cli_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
)

var update = flag.Bool("update", false, "rewrite golden files")

// rlctl runs command lines against one real rlapi.
type rlctl struct {
	t      *testing.T
	env    *apitest.Env
	token  string
	config string
}

func newRlctl(t *testing.T) *rlctl {
	t.Helper()
	env := apitest.Start(t, api.Config{})
	return &rlctl{t: t, env: env, token: env.AdminToken, config: filepath.Join(t.TempDir(), "config.yaml")}
}

type result struct {
	code        int
	out, errOut string
}

// opts tune one run: a terminal on stdout/stdin, input, extra environment.
type opts struct {
	tty   bool
	stdin string
	env   map[string]string
	// bare leaves out the --server and --token the harness adds.
	bare bool
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
		if v, ok := o.env[k]; ok {
			return v
		}
		if k == "RLCTL_CONFIG" {
			return r.config
		}
		return ""
	}
	full := args
	if !o.bare {
		full = append([]string{"--server", r.env.URL, "--token", r.token}, args...)
	}
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

var (
	timestamp = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)
	hexID     = regexp.MustCompile(`"request_id": "[0-9a-f]+"`)
)

// golden compares got with testdata/<name>, after masking timestamps.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = timestamp.ReplaceAllString(got, "<TIME>")
	got = hexID.ReplaceAllString(got, `"request_id": "<ID>"`)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./internal/cli -update rewrites it)\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
