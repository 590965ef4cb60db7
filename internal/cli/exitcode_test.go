package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestExitCodes checks one command per class of error, with the server's
// message printed as is.
func TestExitCodes(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	viewer := r.Env.Token(t, "viewer", "viewer")
	c, err := client.New(r.Env.URL, client.Options{Token: r.Token})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutAdmin(context.Background(), ratelimit.Admin{SubjectType: "user", Subject: "root"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "g", "--user-max-requests", "30", "--window-seconds", "60")

	cases := []struct {
		name   string
		o      clitest.Opts
		args   []string
		code   int
		stderr string
	}{
		{"success", clitest.Opts{}, []string{"rate-limit", "list"}, 0, ""},
		{"unknown flag", clitest.Opts{}, []string{"rate-limit", "list", "--bogus"}, 2, "unknown flag: --bogus"},
		{"missing required flag", clitest.Opts{}, []string{"rate-limit", "set", "--axis", "caller"}, 2, "--entity-type is required"},
		{"bad output format", clitest.Opts{}, []string{"rate-limit", "list", "-o", "xml"}, 2, "-o: must be one of"},
		{"extra argument", clitest.Opts{}, []string{"rate-limit", "list", "extra"}, 2, "unknown command"},
		{"unknown subcommand", clitest.Opts{}, []string{"rate-limit", "lsit"}, 2, "unknown command \"lsit\" for \"rlctl rate-limit\"\n\nDid you mean this?\n\tlist\n"},
		{"unknown subcommand, deeper", clitest.Opts{}, []string{"config", "use-contxt", "x"}, 2, "Did you mean this?\n\tuse-context"},
		{"unknown command", clitest.Opts{}, []string{"rate-limt"}, 2, "Did you mean this?\n\trate-limit"},
		{"missing --token-file", clitest.Opts{Bare: true}, []string{"--server", r.Env.URL, "--token-file", "/nonexistent/token", "rate-limit", "list"}, 2, "read token file: open /nonexistent/token"},
		{"no token", clitest.Opts{Bare: true}, []string{"--server", r.Env.URL, "rate-limit", "list"}, 3, "missing bearer token"},
		{"viewer writes", clitest.Opts{Bare: true}, []string{"--server", r.Env.URL, "--token", viewer, "rate-limit", "enable", "caller:group:g:60"}, 3, "role viewer"},
		{"not found", clitest.Opts{}, []string{"rate-limit", "get", "caller:group:nope:60"}, 4, "definition 'caller:group:nope:60' not found"},
		{"refused floor", clitest.Opts{}, []string{"rate-limit-set", "--axis", "caller", "--entity-type", "group", "--name", "low", "--user-max-requests", "3", "--window-seconds", "60"}, 5,
			"user_max_requests 3 is below the user floor of 20/min for windows <= 60s"},
		{"refused admin quarantine", clitest.Opts{}, []string{"rate-limit-quarantine-add", "--subject-type", "user", "--subject", "root"}, 5, "Refusing to quarantine 'root': it has administrator privileges"},
		{"refused sentinel delete", clitest.Opts{}, []string{"rate-limit-delete", "--id", ratelimit.SentinelCallers}, 5, "cannot be deleted"},
		{"stale version", clitest.Opts{}, []string{"rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "g", "--user-max-requests", "40", "--window-seconds", "60", "--if-version", "9"}, 5, "stored version is 1"},
		{"server unreachable", clitest.Opts{Bare: true}, []string{"--server", "http://127.0.0.1:1", "--token", "x", "--timeout", "2s", "rate-limit", "list"}, 1, "connection refused"},
		{"destructive without --yes, not a terminal", clitest.Opts{}, []string{"rate-limit", "delete", "caller:group:g:60"}, 2, "pass --yes"},
	}
	for _, tc := range cases {
		res := r.RunWith(tc.o, tc.args...)
		if res.Code != tc.code {
			t.Errorf("%s: exit %d, want %d\nstderr: %s", tc.name, res.Code, tc.code, res.ErrOut)
			continue
		}
		if tc.stderr != "" && !strings.Contains(res.ErrOut, tc.stderr) {
			t.Errorf("%s: stderr %q, want it to contain %q", tc.name, res.ErrOut, tc.stderr)
		}
		if tc.code != 0 && res.Out != "" {
			t.Errorf("%s: error output went to stdout: %q", tc.name, res.Out)
		}
	}
	// The refused changes changed nothing.
	if got := r.Must("rate-limit", "get", "caller:group:g:60", "-o", "json"); !strings.Contains(got, `"user_max_requests": 30`) || !strings.Contains(got, `"version": 1`) {
		t.Errorf("after refusals: %s", got)
	}
	if res := r.Run("rate-limit", "get", "caller:group:low:60"); res.Code != 4 {
		t.Errorf("refused floor was stored (get exit %d)", res.Code)
	}
}

func TestFieldErrorsAreListed(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	res := r.Run("rate-limit-set", "--axis", "caller", "--entity-type", "group", "--name", "g",
		"--user-max-requests", "3", "--agent-max-requests", "2", "--window-seconds", "60")
	if res.Code != 5 {
		t.Fatalf("exit %d: %s", res.Code, res.ErrOut)
	}
	lines := strings.Split(strings.TrimSpace(res.ErrOut), "\n")
	if len(lines) != 3 || !strings.HasPrefix(strings.TrimSpace(lines[1]), "user_max_requests 3") || !strings.HasPrefix(strings.TrimSpace(lines[2]), "agent_max_requests 2") {
		t.Errorf("field errors not one per line:\n%s", res.ErrOut)
	}
}

func TestConfirmation(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "g", "--user-max-requests", "30", "--window-seconds", "60")
	// On a terminal, "n" cancels and nothing is deleted.
	res := r.RunWith(clitest.Opts{TTY: true, Stdin: "n\n"}, "rate-limit", "delete", "caller:group:g:60")
	if res.Code != 1 || !strings.Contains(res.ErrOut, "Delete definition caller:group:g:60? [y/N]") {
		t.Errorf("declined: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	r.Must("rate-limit", "get", "caller:group:g:60")
	// "y" deletes.
	res = r.RunWith(clitest.Opts{TTY: true, Stdin: "y\n"}, "rate-limit", "delete", "caller:group:g:60")
	if res.Code != 0 {
		t.Errorf("confirmed: exit %d: %s", res.Code, res.ErrOut)
	}
	if res := r.Run("rate-limit", "get", "caller:group:g:60"); res.Code != 4 {
		t.Errorf("still there after a confirmed delete (exit %d)", res.Code)
	}
	// The flat reference command never prompts, as in the reference.
	r.Must("member", "set", "--subject-type", "user", "--subject", "a", "--groups", "g")
	r.Must("rate-limit-member-delete", "--id", "user:a")
	// quarantine add asks too; --yes answers.
	if res := r.Run("quarantine", "add", "--subject-type", "user", "--subject", "a"); res.Code != 2 {
		t.Errorf("quarantine add without --yes off a terminal: exit %d", res.Code)
	}
	r.Must("quarantine", "add", "--subject-type", "user", "--subject", "a", "--yes")

	// Releasing asks as adding does: off a terminal it needs --yes, on
	// one "n" keeps the quarantine and "y" releases.
	quarantined := func() bool {
		q, err := r.Client().ListQuarantine(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(q.Callers) == 1
	}
	if res := r.Run("quarantine", "remove", "--subject-type", "user", "--subject", "a"); res.Code != 2 || !strings.Contains(res.ErrOut, "refusing to release user a from quarantine without confirmation") {
		t.Errorf("quarantine remove without --yes off a terminal: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	res = r.RunWith(clitest.Opts{TTY: true, Stdin: "n\n"}, "quarantine", "remove", "--subject-type", "user", "--subject", "a")
	if res.Code != 1 || !strings.Contains(res.ErrOut, "Release user a from quarantine? [y/N]") || !quarantined() {
		t.Errorf("declined release: exit %d, stderr %q, still quarantined %v", res.Code, res.ErrOut, quarantined())
	}
	res = r.RunWith(clitest.Opts{TTY: true, Stdin: "y\n"}, "quarantine", "remove", "--subject-type", "user", "--subject", "a")
	if res.Code != 0 || quarantined() {
		t.Errorf("confirmed release: exit %d, stderr %q, still quarantined %v", res.Code, res.ErrOut, quarantined())
	}
	r.Must("quarantine", "add", "--subject-type", "user", "--subject", "a", "--yes")
	if got := r.Must("quarantine", "remove", "--subject-type", "user", "--subject", "a", "--yes"); got != "user:a released from quarantine\n" {
		t.Errorf("quarantine remove --yes said %q", got)
	}

	// Disabling a quarantine sentinel switches that quarantine off for
	// everyone: it asks too. An ordinary definition does not.
	if res := r.Run("rate-limit", "disable", ratelimit.SentinelCallers); res.Code != 2 || !strings.Contains(res.ErrOut, "turning caller quarantine off for every subject") {
		t.Errorf("disable sentinel without --yes: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	res = r.RunWith(clitest.Opts{TTY: true, Stdin: "n\n"}, "rate-limit", "disable", ratelimit.SentinelTargets)
	if res.Code != 1 || !strings.Contains(res.ErrOut, "turning target quarantine off for every subject? [y/N]") {
		t.Errorf("declined sentinel disable: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	if q, _ := r.Client().ListQuarantine(context.Background()); !q.CallersEnabled || !q.TargetsEnabled {
		t.Errorf("a refused disable switched quarantine off: %+v", q)
	}
	r.Must("rate-limit", "disable", ratelimit.SentinelCallers, "--yes")
	r.Must("rate-limit", "enable", ratelimit.SentinelCallers)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "h", "--user-max-requests", "30", "--window-seconds", "60")
	r.Must("rate-limit", "disable", "caller:group:h:60")
	// The reference's flat spellings never ask.
	r.Must("rate-limit-disable", "--id", ratelimit.SentinelCallers)
	r.Must("rate-limit-quarantine-add", "--subject-type", "user", "--subject", "a")
	r.Must("rate-limit-quarantine-remove", "--subject-type", "user", "--subject", "a")
}

// TestDurationsTakeDays: every duration flag reads days, as the dashboard
// and audit --since do.
func TestDurationsTakeDays(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	if got := r.Must("quarantine", "add", "--subject-type", "user", "--subject", "a", "--for", "7d", "--yes"); !strings.Contains(got, "user:a quarantined until ") {
		t.Errorf("--for 7d said %q", got)
	}
	q, err := r.Client().ListQuarantine(context.Background())
	if err != nil || len(q.Callers) != 1 || q.Callers[0].ExpiresAt == nil || q.Callers[0].QuarantinedAt == nil {
		t.Fatalf("quarantine: %+v, %v", q, err)
	}
	if d := q.Callers[0].ExpiresAt.Sub(*q.Callers[0].QuarantinedAt); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour+time.Minute {
		t.Errorf("--for 7d lasts %s", d)
	}
	r.Must("quarantine", "add", "--subject-type", "user", "--subject", "b", "--for", "1d12h", "--yes")
	r.Must("--timeout", "1d", "rate-limit", "list")
	if res := r.Run("quarantine", "add", "--subject-type", "user", "--subject", "c", "--for", "7days", "--yes"); res.Code != 2 || !strings.Contains(res.ErrOut, `"7days" is not a duration such as 30m, 2h, 7d or 1d12h`) {
		t.Errorf("--for 7days: exit %d, stderr %q", res.Code, res.ErrOut)
	}
}

// TestRefusedTokenIsOneRequest: a refused token (401) or role (403) exits
// 3 after one request, never retried: four refused runs from this address
// stay under rlapi's failed-auth lockout (5 a minute), so the admin token
// still works afterwards.
func TestRefusedTokenIsOneRequest(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	viewer := r.Env.Token(t, "viewer", "viewer")
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "g", "--user-max-requests", "30", "--window-seconds", "60")
	for i := range 4 {
		if res := r.RunWith(clitest.Opts{Token: "bogus"}, "rate-limit", "list"); res.Code != 3 || !strings.Contains(res.ErrOut, "Hint:") {
			t.Fatalf("run %d with a bogus token: exit %d, stderr %q; want 3 and the hint", i+1, res.Code, res.ErrOut)
		}
	}
	if res := r.RunWith(clitest.Opts{Token: viewer}, "rate-limit", "disable", "caller:group:g:60"); res.Code != 3 {
		t.Errorf("viewer disables: exit %d, want 3; stderr %q", res.Code, res.ErrOut)
	}
	r.Must("rate-limit", "list")
}

// TestMemberSetGroups: an unused group is stored with a warning; --groups ""
// is the reference's empty list (no membership); one rule refuses a space
// in a subject as in a group name; a server group listing one server twice
// is refused naming both.
func TestMemberSetGroups(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "developers", "--user-max-requests", "30", "--window-seconds", "60")

	res := r.MustWith(clitest.Opts{}, "member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "developers,nosuchgroup")
	if want := `Warning: no definition uses group "nosuchgroup" yet, so it limits nothing`; !strings.Contains(res.ErrOut, want) || strings.Contains(res.ErrOut, `"developers"`) {
		t.Errorf("unused group: stderr %q, want %q and nothing about developers", res.ErrOut, want)
	}
	if res := r.MustWith(clitest.Opts{}, "member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "developers"); res.ErrOut != "" {
		t.Errorf("used group: stderr %q", res.ErrOut)
	}

	if got := r.Must("member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "", "--dry-run"); got != "membership/user:alice would be deleted (no groups)\n" {
		t.Errorf(`--groups "" --dry-run said %q`, got)
	}
	if got := r.Must("member", "set", "--subject-type", "user", "--subject", "alice", "--groups", ""); got != "membership/user:alice deleted (no groups)\n" {
		t.Errorf(`--groups "" said %q`, got)
	}
	if res := r.Run("member", "get", "user:alice"); res.Code != 4 {
		t.Errorf("membership still there after --groups \"\" (exit %d)", res.Code)
	}
	if got := r.Must("rate-limit-member-set", "--subject-type", "user", "--subject", "alice", "--groups", ""); got != "membership/user:alice unchanged (no groups, no membership)\n" {
		t.Errorf(`--groups "" again said %q`, got)
	}
	r.Must("quarantine", "add", "--subject-type", "user", "--subject", "mallory", "--yes")
	if res := r.Run("member", "set", "--subject-type", "user", "--subject", "mallory", "--groups", ""); res.Code != 2 || !strings.Contains(res.ErrOut, "user:mallory is quarantined") {
		t.Errorf(`--groups "" on a quarantined subject: exit %d, stderr %q`, res.Code, res.ErrOut)
	}

	rule := "names and subjects are 1-256 bytes of UTF-8 (any script) without whitespace or control characters"
	for _, args := range [][]string{
		{"member", "set", "--subject-type", "user", "--subject", "Alice Smith", "--groups", "developers"},
		{"rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "power users", "--user-max-requests", "30", "--window-seconds", "60"},
	} {
		if res := r.Run(args...); res.Code == 0 || !strings.Contains(res.ErrOut, "must not contain whitespace") || !strings.Contains(res.ErrOut, rule) {
			t.Errorf("%v: exit %d, stderr %q; want the one rule", args, res.Code, res.ErrOut)
		}
	}

	res = r.Run("rate-limit", "set", "--axis", "target", "--entity-type", "server_group", "--name", "kb", "--members", "aws-kb,/aws-kb", "--max-requests", "10", "--window-seconds", "60")
	if res.Code != 2 || !strings.Contains(res.ErrOut, `--members[1]: "/aws-kb" is server "aws-kb" again (members[0] is "aws-kb"): list each server once`) {
		t.Errorf("server group with a repeated member: exit %d, stderr %q", res.Code, res.ErrOut)
	}
}

// TestNetworkCommands: member set --network and quarantine add/remove
// --network against a real rlapi; --network with --subject-type is a usage
// error; a bad CIDR is the server's refusal naming the subject.
func TestNetworkCommands(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "anonymous", "--user-max-requests", "60", "--window-seconds", "60")
	if got := r.Must("member", "set", "--network", "2001:DB8:42::/48", "--groups", "anonymous"); got != "membership/network:2001:db8:42::/48 created\n" {
		t.Errorf("member set --network said %q", got)
	}
	if got := r.Must("member", "get", "network:2001:db8:42::/48", "-o", "json"); !strings.Contains(got, `"subject_type": "network"`) || !strings.Contains(got, `"anonymous"`) {
		t.Errorf("member get of a network: %s", got)
	}
	if got := r.Must("member", "list"); !strings.Contains(got, "network:2001:db8:42::/48") {
		t.Errorf("member list lacks the network:\n%s", got)
	}
	if got := r.Must("quarantine", "add", "--network", "203.0.113.0/24", "--reason", "scanner", "--yes"); got != "network:203.0.113.0/24 quarantined\n" {
		t.Errorf("quarantine add --network said %q", got)
	}
	if got := r.Must("quarantine", "list"); !strings.Contains(got, "caller\tnetwork:203.0.113.0/24\tscanner") {
		t.Errorf("quarantine list:\n%s", got)
	}
	if got := r.Must("quarantine", "remove", "--network", "203.0.113.0/24", "--yes"); got != "network:203.0.113.0/24 released from quarantine\n" {
		t.Errorf("quarantine remove --network said %q", got)
	}
	if res := r.Run("quarantine", "add", "--network", "10.0.0.0/8", "--subject-type", "user", "--yes"); res.Code != 2 || !strings.Contains(res.ErrOut, "give one or the other") {
		t.Errorf("--network with --subject-type: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	if res := r.Run("member", "set", "--network", "10.1.0.1/16", "--groups", "anonymous"); res.Code != 2 || !strings.Contains(res.ErrOut, "--network: has host bits set: the network is 10.1.0.0/16") {
		t.Errorf("member set of a host-bits network: exit %d, stderr %q", res.Code, res.ErrOut)
	}
}
