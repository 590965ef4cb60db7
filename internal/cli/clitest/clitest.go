// Package clitest runs rlctl command lines in tests, as internal/apitest
// runs rlapi: the real command tree (cli.Run) over in-memory streams, with
// a configuration file of its own, against a real rlapi (apitest.Start) or
// none.
//
// It imports internal/cli, so only external test packages (package
// admin_test, state_test, ...) may use it.
package clitest

import (
	"context"
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
	"github.com/rlctl/rlctl/pkg/client"
)

// Rlctl runs command lines for one test.
type Rlctl struct {
	T testing.TB
	// Env is the rlapi the command lines go to; nil for none.
	Env *apitest.Env
	// Token is what Run passes as --token: Env's admin token.
	Token string
	// Config is the configuration file (RLCTL_CONFIG), in a temporary
	// directory; it does not exist until a command writes it.
	Config string
	// Environ is the rest of the environment rlctl sees: nothing unless
	// set.
	Environ map[string]string
}

// Start serves a real rlapi (with the zero api.Config) for the test and
// returns an Rlctl that reaches it as the admin.
func Start(t testing.TB) *Rlctl {
	t.Helper()
	r := New(t)
	r.Env = apitest.Start(t, api.Config{})
	r.Token = r.Env.AdminToken
	return r
}

// StartParallel is Start for a test that runs in parallel with the
// others: it calls t.Parallel first.
func StartParallel(t *testing.T) *Rlctl {
	t.Helper()
	t.Parallel()
	return Start(t)
}

// New returns an Rlctl without a server, for command lines that need none
// or name their own.
func New(t testing.TB) *Rlctl {
	return &Rlctl{T: t, Config: filepath.Join(t.TempDir(), "config.yaml"), Environ: map[string]string{}}
}

// Result is what one command line did.
type Result struct {
	Code        int // the exit code
	Out, ErrOut string
}

// Opts tune one command line.
type Opts struct {
	// TTY makes stdin and stdout terminals: tables get headers, and
	// rlctl may ask questions.
	TTY bool
	// Stdin is what the user types.
	Stdin string
	// Token replaces Rlctl.Token.
	Token string
	// Env is environment for this line only, over Rlctl.Environ and
	// RLCTL_CONFIG.
	Env map[string]string
	// Bare leaves out the --server and --token Run adds when there is an
	// Env.
	Bare bool
}

// Run runs one command line against Env as Token: --server and --token
// (when there is an Env) come first, then args.
func (r *Rlctl) Run(args ...string) Result {
	r.T.Helper()
	return r.RunWith(Opts{}, args...)
}

// RunWith is Run with options.
func (r *Rlctl) RunWith(o Opts, args ...string) Result {
	r.T.Helper()
	ios, in, out, errOut := iostreams.Test()
	in.WriteString(o.Stdin)
	ios.SetStdoutTTY(o.TTY)
	ios.SetStdinTTY(o.TTY)
	full := args
	if !o.Bare && r.Env != nil {
		tok := o.Token
		if tok == "" {
			tok = r.Token
		}
		full = append([]string{"--server", r.Env.URL, "--token", tok}, args...)
	}
	code := cli.Run(context.Background(), full, ios, r.Getenv(o.Env))
	return Result{Code: code, Out: out.String(), ErrOut: errOut.String()}
}

// Getenv is the environment a command line sees, for tests that call
// cli.Run themselves: extra, then RLCTL_CONFIG (Config), then Environ.
func (r *Rlctl) Getenv(extra map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		if k == "RLCTL_CONFIG" {
			return r.Config
		}
		return r.Environ[k]
	}
}

// Must runs a command line that has to succeed and returns its stdout.
func (r *Rlctl) Must(args ...string) string {
	r.T.Helper()
	return r.MustWith(Opts{}, args...).Out
}

// MustWith is Must with options; it returns the whole result.
func (r *Rlctl) MustWith(o Opts, args ...string) Result {
	r.T.Helper()
	res := r.RunWith(o, args...)
	if res.Code != 0 {
		r.T.Fatalf("rlctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.Code, res.Out, res.ErrOut)
	}
	return res
}

// Expect runs a command line, fails the test unless it exits with code,
// and returns the result.
func (r *Rlctl) Expect(code int, args ...string) Result {
	r.T.Helper()
	res := r.Run(args...)
	if res.Code != code {
		r.T.Fatalf("rlctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.Code, code, res.Out, res.ErrOut)
	}
	return res
}

// Client is an SDK client of Env as Token, for setting up state the way
// other tools would.
func (r *Rlctl) Client() *client.Client {
	r.T.Helper()
	return r.ClientAs(r.Token)
}

// ClientAs is Client with another token.
func (r *Rlctl) ClientAs(tok string) *client.Client {
	r.T.Helper()
	c, err := client.New(r.Env.URL, client.Options{Token: tok, Timeout: time.Minute})
	if err != nil {
		r.T.Fatal(err)
	}
	return c
}

// Factory is a Factory over test streams with an empty environment, for
// tests of flag parsing through a command's runF.
func Factory() *cmdutil.Factory {
	ios, _, _, _ := iostreams.Test()
	return cmdutil.NewFactory(ios, func(string) string { return "" })
}

// Execute runs cmd on its own with args, its output going to f's streams.
func Execute(f *cmdutil.Factory, cmd *cobra.Command, args ...string) error {
	cmd.SetArgs(args)
	cmd.SetOut(f.IOStreams.Out)
	cmd.SetErr(f.IOStreams.ErrOut)
	return cmd.Execute()
}
