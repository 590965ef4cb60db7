package cli_test

// rlctl's surface of the algorithm fields: rate-limit set's
// flags and completion, the columns of list, get and status, and the
// refusals.

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/ratelimitcmd"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestSetAlgorithmFlags(t *testing.T) {
	t.Parallel()
	var got ratelimit.Definition
	cmd := ratelimitcmd.NewCmdSet(clitest.Factory(), func(o *ratelimitcmd.SetOptions) error {
		got = o.Definition
		return nil
	})
	err := clitest.Execute(clitest.Factory(), cmd, "--axis", "caller", "--entity-type", "group", "--name", "devs", "--window-seconds", "60",
		"--user-max-requests", "100", "--agent-max-requests", "40", "--algorithm", "token_bucket", "--user-burst", "200", "--agent-burst", "10")
	if err != nil {
		t.Fatal(err)
	}
	if got.Algorithm != "token_bucket" || got.UserBurst == nil || *got.UserBurst != 200 || got.AgentBurst == nil || *got.AgentBurst != 10 || got.Burst != nil {
		t.Errorf("parsed %+v", got)
	}
	// Flags not given are absent: no algorithm (the server's default) and
	// no bursts.
	cmd = ratelimitcmd.NewCmdSet(clitest.Factory(), func(o *ratelimitcmd.SetOptions) error {
		got = o.Definition
		return nil
	})
	if err := clitest.Execute(clitest.Factory(), cmd, "--axis", "target", "--entity-type", "mcp_server", "--name", "kb", "--window-seconds", "60",
		"--max-requests", "10"); err != nil {
		t.Fatal(err)
	}
	if got.Algorithm != "" || got.Burst != nil || got.UserBurst != nil || got.AgentBurst != nil {
		t.Errorf("parsed %+v", got)
	}
}

func TestSetAlgorithmCompletion(t *testing.T) {
	t.Parallel()
	r := clitest.New(t)
	out := r.Must("__complete", "rate-limit", "set", "--algorithm", "")
	if want := "fixed_window\nsliding_window\ntoken_bucket\n:4\n"; !strings.HasPrefix(out, want) {
		t.Errorf("completion of --algorithm:\n%s\nwant:\n%s", out, want)
	}
}

// A fixed window, as every definition written before algorithms, shows
// its algorithm in -o wide, json and yaml; the narrow table stays as it
// was.
func TestListShowsDefaultAlgorithm(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "developers",
		"--user-max-requests", "100", "--window-seconds", "60")
	wide := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "list", "--group", "developers", "-o", "wide").Out
	header, row, _ := strings.Cut(wide, "\n")
	if !strings.Contains(strings.Join(strings.Fields(header), " "), "LIMIT ALGORITHM BURST") {
		t.Errorf("wide header lacks ALGORITHM and BURST after LIMIT:\n%s", header)
	}
	if f := strings.Fields(row); len(f) < 8 || f[5] != "user=100" || f[6] != "fixed_window" || f[7] != "-" {
		t.Errorf("wide row %q, want user=100 fixed_window -", row)
	}
	if out := r.Must("rate-limit", "get", "caller:group:developers:60", "-o", "yaml"); !strings.Contains(out, "algorithm: fixed_window\n") {
		t.Errorf("get -o yaml:\n%s", out)
	}
	if out := r.Must("rate-limit", "status", "--identity", "developers", "-o", "json"); !strings.Contains(out, `"algorithm": "fixed_window"`) {
		t.Errorf("status -o json:\n%s", out)
	}
}

// rate-limit set stores what its flags say, and list, get and status
// show it: the narrow LIMIT column names an algorithm other than the
// fixed window and its bursts.
func TestSetAlgorithmRoundTrip(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "mcp_server", "--name", "aws-kb",
		"--max-requests", "600", "--window-seconds", "60", "--algorithm", "token_bucket", "--burst", "50")
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "developers",
		"--user-max-requests", "100", "--agent-max-requests", "40", "--window-seconds", "60", "--algorithm", "token_bucket", "--agent-burst", "10")
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "partners",
		"--user-max-requests", "30", "--window-seconds", "10", "--algorithm", "sliding_window")

	piped := r.Must("rate-limit", "list", "--axis", "target")
	if !strings.Contains(piped, "\t600 (token_bucket, burst 50)\t") {
		t.Errorf("list LIMIT of the bucket:\n%s", piped)
	}
	piped = r.Must("rate-limit", "list", "--axis", "caller", "-o", "wide")
	for _, want := range []string{
		"\tuser=100 agent=40 (token_bucket, burst user=100 agent=10)\ttoken_bucket\tuser=100 agent=10\t",
		"\tuser=30 (sliding_window)\tsliding_window\t-\t",
	} {
		if !strings.Contains(piped, want) {
			t.Errorf("list -o wide lacks %q:\n%s", want, piped)
		}
	}
	if out := r.Must("rate-limit", "get", "target:mcp_server:aws-kb:60", "-o", "yaml"); !strings.Contains(out, "algorithm: token_bucket\nburst: 50\n") {
		t.Errorf("get -o yaml:\n%s", out)
	}
	if out := r.Must("rate-limit", "status", "--identity", "developers"); !strings.Contains(out, "(token_bucket, burst user=100 agent=10)") {
		t.Errorf("status:\n%s", out)
	}
	// Changing only the algorithm updates the same definition, and says so.
	out := r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "partners",
		"--user-max-requests", "30", "--window-seconds", "10")
	if want := "definition/caller:group:partners:10 updated: algorithm: \"sliding_window\" -> \"fixed_window\"\n"; out != want {
		t.Errorf("set back to a fixed window said %q, want %q", out, want)
	}
}

// Each refusal is exit 2 (refused by rlctl with the server's rules, before
// any request), naming the flag; nothing is stored.
func TestSetAlgorithmRefused(t *testing.T) {
	r := clitest.StartParallel(t)
	target := []string{"rate-limit", "set", "--axis", "target", "--entity-type", "mcp_server", "--name", "aws-kb", "--max-requests", "600", "--window-seconds", "60"}
	caller := []string{"rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "devs", "--user-max-requests", "100", "--window-seconds", "60"}
	for _, tt := range []struct {
		args  []string
		field string
	}{
		{append(target[:len(target):len(target)], "--algorithm", "leaky_bucket"), "--algorithm: must be one of"},
		{append(target[:len(target):len(target)], "--algorithm", "token_bucket", "--burst", "0"), "--burst: must be >= 1"},
		{append(target[:len(target):len(target)], "--algorithm", "token_bucket", "--user-burst", "5"), "--user-burst: not allowed"},
		{append(caller[:len(caller):len(caller)], "--algorithm", "token_bucket", "--burst", "5"), "--burst: not allowed"},
		{append(caller[:len(caller):len(caller)], "--algorithm", "token_bucket", "--agent-burst", "5"), "--agent-burst: not allowed"},
		{append(caller[:len(caller):len(caller)], "--user-burst", "5"), "--user-burst: not allowed"},
		{append(target[:len(target):len(target)], "--algorithm", "sliding_window", "--burst", "5"), "--burst: not allowed"},
	} {
		res := r.Run(tt.args...)
		if res.Code != 2 || !strings.Contains(res.ErrOut, tt.field) || !strings.Contains(res.ErrOut, "nothing was sent") {
			t.Errorf("rlctl %s: exit %d, want 2 naming %s\nstderr: %s", strings.Join(tt.args, " "), res.Code, tt.field, res.ErrOut)
		}
	}
	if out := r.Must("rate-limit", "list", "-o", "name"); strings.Contains(out, "aws-kb") || strings.Contains(out, "devs") {
		t.Errorf("a refused set stored something:\n%s", out)
	}
}
