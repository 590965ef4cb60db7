package cli_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

// TestCompletion: --subject completes bare subjects of the given type (the
// quarantined ones for remove), --entity-type follows --axis, and
// positions and flags without candidates complete nothing rather than
// file names (:4 is cobra's NoFileComp directive).
func TestCompletion(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "developers", "--user-max-requests", "30", "--window-seconds", "60")
	r.Must("member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "developers")
	r.Must("member", "set", "--subject-type", "client", "--subject", "ci-bot", "--groups", "developers")
	r.Must("quarantine", "add", "--subject-type", "user", "--subject", "mallory", "--reason", "scraping", "--yes")
	r.Must("quarantine", "add", "--subject-type", "server", "--subject", "evil-srv", "--yes")

	complete := func(args ...string) []string {
		t.Helper()
		out := r.Must(append([]string{"__complete"}, args...)...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if last := lines[len(lines)-1]; last != ":4" {
			t.Errorf("%v: directive %q, want :4 (no files)", args, last)
		}
		return lines[:len(lines)-1]
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"quarantine", "remove", "--subject-type", "user", "--subject", ""}, "mallory\tuser, quarantined: scraping"},
		{[]string{"quarantine", "remove", "--subject", ""}, "mallory\tuser, quarantined: scraping|evil-srv\tserver, quarantined"},
		{[]string{"quarantine", "add", "--subject-type", "user", "--subject", ""}, "alice\tuser in developers"},
		{[]string{"rate-limit", "set", "--axis", "target", "--entity-type", ""}, "mcp_server|a2a_agent|mcp_tool|a2a_skill|server_group|route"},
		{[]string{"rate-limit", "set", "--axis", "caller", "--entity-type", ""}, "group|user|client|team"},
		{[]string{"quarantine", "add", "--reason", ""}, ""},
		{[]string{"rate-limit", "list", ""}, ""},
		{[]string{"help", "exit-codes", ""}, ""},
	} {
		if got := strings.Join(complete(tt.args...), "|"); got != tt.want {
			t.Errorf("complete %v = %q, want %q", tt.args, got, tt.want)
		}
	}
}
