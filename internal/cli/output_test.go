package cli_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

func seed(r *clitest.Rlctl) {
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "developers",
		"--user-max-requests", "100", "--agent-max-requests", "50", "--window-seconds", "60", "--description", "burst cap")
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "server_group", "--name", "fragile",
		"--max-requests", "100", "--window-seconds", "60", "--members", "airegistry-tools,/aws-kb/", "--mode", "shadow")
	r.Must("member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "developers")
}

// TestOutputFormats pins the table, wide, json, yaml and name outputs with
// golden files: they are what scripts parse.
func TestOutputFormats(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(r)
	cases := []struct {
		golden string
		tty    bool
		args   []string
	}{
		{"list-table-tty.golden", true, []string{"rate-limit", "list"}},
		{"list-table-piped.golden", false, []string{"rate-limit", "list"}},
		{"list-wide-tty.golden", true, []string{"rate-limit", "list", "-o", "wide"}},
		{"list-json.golden", false, []string{"rate-limit", "list", "-o", "json"}},
		{"list-yaml.golden", false, []string{"rate-limit", "list", "-o", "yaml"}},
		{"list-name.golden", false, []string{"rate-limit", "list", "-o", "name"}},
		{"get-json.golden", false, []string{"rate-limit", "get", "target:server_group:fragile:60", "-o", "json"}},
		{"member-list-tty.golden", true, []string{"member", "list"}},
		{"member-get-yaml.golden", false, []string{"member", "get", "user:alice", "-o", "yaml"}},
	}
	for _, c := range cases {
		res := r.RunWith(clitest.Opts{TTY: c.tty}, c.args...)
		if res.Code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, res.Code, res.ErrOut)
		}
		golden(t, c.golden, res.Out)
	}
}

// TestPipedOutputIsTabSeparatedUnderAHeader: piped, a table is one
// tab-separated header line, then one tab-separated line per row.
func TestPipedOutputIsTabSeparatedUnderAHeader(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(r)
	piped := r.Must("rate-limit", "list", "--group", "developers")
	header, row, _ := strings.Cut(piped, "\n")
	if header != "ID\tAXIS\tENTITY\tNAME\tWINDOW\tLIMIT\tMODE\tENABLED" || strings.Count(row, "\n") != 1 {
		t.Fatalf("piped output is not one header line and one row:\n%q", piped)
	}
	fields := strings.Split(strings.TrimSuffix(row, "\n"), "\t")
	if len(fields) != 8 || fields[0] != "caller:group:developers:60" || fields[5] != "user=100 agent=50" {
		t.Errorf("piped fields = %q", fields)
	}
	tty := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "list", "--group", "developers").Out
	if !strings.HasPrefix(tty, "ID ") || strings.Contains(tty, "\t") {
		t.Errorf("terminal output lacks a header or has tabs:\n%s", tty)
	}
	if strings.Contains(tty, "\x1b[") {
		t.Errorf("colour codes although colour is off in tests:\n%q", tty)
	}
}

func TestGlobalFlagsAnywhere(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(r)
	for _, args := range [][]string{
		{"-o", "name", "--server", r.Env.URL, "--token", r.Token, "rate-limit", "list", "--axis", "caller"},
		{"rate-limit", "-o", "name", "list", "--server", r.Env.URL, "--axis", "caller", "--token", r.Token},
		{"rate-limit", "list", "--axis", "caller", "--token", r.Token, "--server", r.Env.URL, "-o", "name"},
	} {
		res := r.RunWith(clitest.Opts{Bare: true}, args...)
		if res.Code != 0 || res.Out != "definition/caller:group:developers:60\n" {
			t.Errorf("%v: exit %d out %q err %q", args, res.Code, res.Out, res.ErrOut)
		}
	}
}

func TestEndpointFromEnvironmentAndContexts(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	seed(r)
	tokenFile := writeTokenFile(t, r.Token+"\n")
	// Environment variables.
	res := r.RunWith(clitest.Opts{Bare: true, Env: map[string]string{"RLCTL_SERVER": r.Env.URL, "RLCTL_TOKEN_FILE": tokenFile}}, "rate-limit", "list", "-o", "name")
	if res.Code != 0 || !strings.Contains(res.Out, "caller:group:developers:60") {
		t.Errorf("env endpoint: exit %d %s", res.Code, res.ErrOut)
	}
	res = r.RunWith(clitest.Opts{Bare: true, Env: map[string]string{"RLCTL_SERVER": r.Env.URL, "RLCTL_TOKEN": r.Token}}, "rate-limit", "list", "-o", "name")
	if res.Code != 0 {
		t.Errorf("RLCTL_TOKEN: exit %d %s", res.Code, res.ErrOut)
	}
	// A flag beats the environment.
	res = r.RunWith(clitest.Opts{Bare: true, Env: map[string]string{"RLCTL_SERVER": "http://127.0.0.1:1", "RLCTL_TOKEN": r.Token}}, "--server", r.Env.URL, "rate-limit", "list")
	if res.Code != 0 {
		t.Errorf("--server over RLCTL_SERVER: exit %d %s", res.Code, res.ErrOut)
	}
	// The reference's JSON token-file shapes.
	for _, body := range []string{`{"access_token":"` + r.Token + `"}`, `{"tokens":{"access_token":"` + r.Token + `"}}`, `{"token":"` + r.Token + `"}`,
		`{"token_data":{"access_token":"` + r.Token + `","expires_in":3600}}`} {
		res = r.RunWith(clitest.Opts{Bare: true}, "--server", r.Env.URL, "--token-file", writeTokenFile(t, body), "rate-limit", "list")
		if res.Code != 0 {
			t.Errorf("token file %s: exit %d %s", body, res.Code, res.ErrOut)
		}
	}
}

func TestDebugRedactsToken(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	res := r.Run("--debug", "rate-limit", "list")
	if res.Code != 0 {
		t.Fatal(res.ErrOut)
	}
	if !strings.Contains(res.ErrOut, "GET ") || !strings.Contains(res.ErrOut, "/api/rate-limits") {
		t.Errorf("--debug printed no request line:\n%s", res.ErrOut)
	}
	if strings.Contains(res.ErrOut, r.Token) {
		t.Error("--debug leaked the token")
	}
}

func TestSetPrintsWhatChanged(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	set := func(user string, extra ...string) string {
		return r.Must(append([]string{"rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "g",
			"--user-max-requests", user, "--window-seconds", "60"}, extra...)...)
	}
	if got := set("30"); got != "definition/caller:group:g:60 created\n" {
		t.Errorf("create said %q", got)
	}
	if got := set("30"); got != "definition/caller:group:g:60 unchanged\n" {
		t.Errorf("same again said %q", got)
	}
	if got := set("40", "--mode", "shadow"); got != "definition/caller:group:g:60 updated: mode: \"enforce\" -> \"shadow\", user_max_requests: 30 -> 40\n" {
		t.Errorf("update said %q", got)
	}
	if got := set("50", "--dry-run"); !strings.Contains(got, "would be updated: mode: \"shadow\" -> \"enforce\", user_max_requests: 40 -> 50") {
		t.Errorf("dry run said %q", got)
	}
	if got := r.Must("rate-limit", "get", "caller:group:g:60", "-o", "json"); !strings.Contains(got, `"user_max_requests": 40`) {
		t.Errorf("dry run stored something: %s", got)
	}
}
