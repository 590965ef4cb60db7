package cli_test

// rlctl's surface of a definition's fail policy (open, closed, degrade)
// and of --fail-closed, its older spelling.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

func TestSetFailPolicyAndApplyExport(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit-set", "--axis", "target", "--entity-type", "mcp_server", "--name", "payments",
		"--max-requests", "100", "--window-seconds", "60", "--fail-policy", "degrade")
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "mcp_server", "--name", "older",
		"--max-requests", "100", "--window-seconds", "60", "--fail-closed")
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "mcp_server", "--name", "plain",
		"--max-requests", "100", "--window-seconds", "60")
	if out := r.Must("rate-limit", "get", "target:mcp_server:payments:60", "-o", "yaml"); !strings.Contains(out, "fail_policy: degrade\n") || !strings.Contains(out, "fail_closed: false\n") {
		t.Errorf("get -o yaml lacks fail_policy: degrade:\n%s", out)
	}
	// The older spelling reads back in both.
	if out := r.Must("rate-limit", "get", "target:mcp_server:older:60", "-o", "yaml"); !strings.Contains(out, "fail_policy: closed\n") || !strings.Contains(out, "fail_closed: true\n") {
		t.Errorf("get -o yaml of a --fail-closed definition:\n%s\nwant fail_policy closed, fail_closed true", out)
	}
	if out := r.Must("rate-limit", "get", "target:mcp_server:plain:60", "-o", "yaml"); strings.Contains(out, "fail_policy") {
		t.Errorf("get -o yaml of a definition without --fail-policy says one:\n%s", out)
	}
	wide := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "list", "-o", "wide").Out
	if !strings.Contains(wide, "FAIL-POLICY") || !strings.Contains(wide, "degrade") || !strings.Contains(wide, "FAIL-CLOSED") {
		t.Errorf("list -o wide lacks the FAIL-POLICY column or degrade:\n%s", wide)
	}
	// Changing it says what changed.
	if out := r.Must("rate-limit-set", "--axis", "target", "--entity-type", "mcp_server", "--name", "payments",
		"--max-requests", "100", "--window-seconds", "60", "--fail-policy", "closed"); !strings.Contains(out, "fail_policy") || !strings.Contains(out, "closed") {
		t.Errorf("set --fail-policy closed over degrade:\n%s", out)
	}
	// Bad values and the two spellings in conflict are usage errors.
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--fail-policy", "deny"}, `--fail-policy: must be one of open, closed, degrade (got "deny"); nothing was sent`},
		{[]string{"--fail-policy", "open", "--fail-closed"},
			"--fail-closed is the older spelling of --fail-policy closed and contradicts --fail-policy open: give --fail-policy alone; nothing was sent"},
	} {
		args := append([]string{"rate-limit-set", "--axis", "target", "--entity-type", "mcp_server", "--name", "payments",
			"--max-requests", "100", "--window-seconds", "60"}, tc.args...)
		if res := r.Run(args...); res.Code != 2 || !strings.Contains(res.ErrOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, res.Code, res.ErrOut, tc.msg)
		}
	}
	// Both spellings of closed agree.
	if res := r.Run("rate-limit-set", "--axis", "target", "--entity-type", "mcp_server", "--name", "payments",
		"--max-requests", "100", "--window-seconds", "60", "--fail-policy", "closed", "--fail-closed"); res.Code != 0 || !strings.Contains(res.Out, "unchanged") {
		t.Errorf("--fail-policy closed --fail-closed over closed: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	if out := r.Must("rate-limit", "get", "target:mcp_server:payments:60", "-o", "yaml"); !strings.Contains(out, "fail_policy: closed\n") || !strings.Contains(out, "version: 2\n") {
		t.Errorf("after the refused sets:\n%s\nwant fail_policy closed, version 2", out)
	}
	// Export, apply back: unchanged; a file that changes it, one update.
	exported := r.Must("export")
	if strings.Count(exported, "fail_policy: closed") != 2 || strings.Count(exported, "fail_policy:") != 2 {
		t.Errorf("export: want two fail_policy closed (none goes unsaid):\n%s", exported)
	}
	file := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := r.Must("apply", "-f", file); !strings.Contains(out, "created 0, updated 0, deleted 0") {
		t.Errorf("applying the export changed something:\n%s", out)
	}
	changed := strings.Replace(exported, "fail_closed: true\n  fail_policy: closed", "fail_closed: false\n  fail_policy: degrade", 1)
	if changed == exported {
		t.Fatalf("the export does not write fail_closed and fail_policy together:\n%s", exported)
	}
	if err := os.WriteFile(file, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("diff", "-f", file); res.Code != 6 || !strings.Contains(res.Out, `configured: fail_closed: true -> false, fail_policy: "closed" -> "degrade"`) {
		t.Errorf("diff of fail_policy degrade: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	r.Must("apply", "-f", file)
	if out := r.Must("export"); strings.Count(out, "fail_policy: degrade") != 1 {
		t.Errorf("after apply:\n%s\nwant one fail_policy degrade", out)
	}
	if out := r.Must("__complete", "rate-limit", "set", "--fail-policy", ""); !strings.HasPrefix(out, "open\nclosed\ndegrade\n") {
		t.Errorf("completion of --fail-policy:\n%s", out)
	}
	if out := r.Must("rate-limit-set", "--help"); !strings.Contains(out, "--fail-policy") || !strings.Contains(out, "older spelling of --fail-policy closed") {
		t.Errorf("rate-limit-set --help does not say what --fail-policy is:\n%s", out)
	}
}
