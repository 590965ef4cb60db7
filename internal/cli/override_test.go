package cli_test

// rlctl's surface of overrides: --override, definitions naming one user,
// client or team, and what status says of the limits they took over.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

func TestSetOverridesStatusAndApplyExport(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit-set", "--axis", "caller", "--entity-type", "group", "--name", "all", "--everyone",
		"--user-max-requests", "25", "--window-seconds", "60")
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "group", "--name", "premium", "--override",
		"--user-max-requests", "100", "--window-seconds", "60")
	r.Must("rate-limit", "set", "--axis", "caller", "--entity-type", "user", "--name", "alice",
		"--user-max-requests", "30", "--window-seconds", "60")
	r.Must("member", "set", "--subject-type", "user", "--subject", "alice", "--groups", "premium")

	if out := r.Must("rate-limit", "get", "caller:group:premium:60", "-o", "yaml"); !strings.Contains(out, "override: true\n") {
		t.Errorf("get -o yaml lacks override: true:\n%s", out)
	}
	if out := r.Must("rate-limit", "get", "caller:group:all:60", "-o", "yaml"); strings.Contains(out, "override") {
		t.Errorf("get -o yaml of a definition without --override says override:\n%s", out)
	}
	if out := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "list").Out; !strings.Contains(out, "user=100 (override)") ||
		!strings.Contains(out, "caller:user:alice:60") {
		t.Errorf("list lacks premium's (override) or alice's definition:\n%s", out)
	}
	// Status: the applied limit and the overridden ones.
	st := r.Must("rate-limit", "status", "--username", "alice", "--entity-type", "mcp_server", "--name", "srv", "-o", "json")
	for _, want := range []string{`"caller:group:all:60": "caller:user:alice:60"`, `"caller:group:premium:60": "caller:user:alice:60"`,
		`"caller:user:alice:60": "user:alice"`} {
		if !strings.Contains(st, want) {
			t.Errorf("status -o json lacks %s:\n%s", want, st)
		}
	}
	table := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "status", "--username", "alice", "--entity-type", "mcp_server", "--name", "srv").Out
	if !strings.Contains(table, "OVERRIDDEN-BY") || strings.Count(table, "caller:user:alice:60") != 3 {
		t.Errorf("status table: want an OVERRIDDEN-BY column naming alice's definition twice:\n%s", table)
	}
	if table := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "status", "--username", "carol", "--entity-type", "mcp_server", "--name", "srv").Out; strings.Contains(table, "OVERRIDDEN-BY") {
		t.Errorf("status of a caller no override applies to shows OVERRIDDEN-BY:\n%s", table)
	}

	// Refused before anything is sent, naming the flag and the rule.
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--entity-type", "group", "--name", "all", "--everyone", "--override"}, "--override: not allowed with everyone"},
		{[]string{"--entity-type", "user", "--name", "alice", "--per", "ip"}, "--per: must be caller on a user definition"},
		{[]string{"--entity-type", "client", "--name", "a|b"}, "--name: must not contain '|'"},
	} {
		args := append([]string{"rate-limit-set", "--axis", "caller", "--user-max-requests", "30", "--window-seconds", "60"}, tc.args...)
		if res := r.Run(args...); res.Code != 2 || !strings.Contains(res.ErrOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, res.Code, res.ErrOut, tc.msg)
		}
	}

	// Export, apply back: unchanged; a file dropping override, one update.
	exported := r.Must("export")
	if strings.Count(exported, "override: true") != 2 {
		t.Errorf("export: want premium's and alice's override: true:\n%s", exported)
	}
	file := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := r.Must("apply", "-f", file); !strings.Contains(out, "created 0, updated 0, deleted 0") {
		t.Errorf("applying the export changed something:\n%s", out)
	}
	changed := strings.Replace(exported, "  override: true\n", "", 1)
	if changed == exported {
		t.Fatalf("the export does not write override on a line of its own:\n%s", exported)
	}
	if err := os.WriteFile(file, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("diff", "-f", file); res.Code != 6 || !strings.Contains(res.Out, "caller:group:premium:60") || !strings.Contains(res.Out, "override: true -> ") {
		t.Errorf("diff dropping premium's override: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	if out := r.Must("rate-limit-set", "--help"); !strings.Contains(out, "--override") || !strings.Contains(out, "most specific override applies") {
		t.Errorf("rate-limit-set --help does not say what --override is:\n%s", out)
	}
}
