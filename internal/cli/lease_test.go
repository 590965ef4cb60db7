package cli_test

// rlctl's surface of a definition's lease (auto, never, always).

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

func TestSetLeaseAndApplyExport(t *testing.T) {
	r := clitest.StartParallel(t)
	r.Must("rate-limit-set", "--axis", "target", "--entity-type", "mcp_server", "--name", "billing-api",
		"--max-requests", "1000", "--window-seconds", "3600", "--lease", "never")
	r.Must("rate-limit", "set", "--axis", "target", "--entity-type", "mcp_server", "--name", "plain",
		"--max-requests", "100", "--window-seconds", "60")
	if out := r.Must("rate-limit", "get", "target:mcp_server:billing-api:3600", "-o", "yaml"); !strings.Contains(out, "lease: never\n") {
		t.Errorf("get -o yaml lacks lease: never:\n%s", out)
	}
	if out := r.Must("rate-limit", "get", "target:mcp_server:plain:60", "-o", "yaml"); strings.Contains(out, "lease") {
		t.Errorf("get -o yaml of a definition without --lease says a lease:\n%s", out)
	}
	wide := r.RunWith(clitest.Opts{TTY: true}, "rate-limit", "list", "-o", "wide").Out
	if !strings.Contains(wide, "LEASE") || !strings.Contains(wide, "never") {
		t.Errorf("list -o wide lacks the LEASE column or never:\n%s", wide)
	}
	// Changing it says what changed.
	if out := r.Must("rate-limit-set", "--axis", "target", "--entity-type", "mcp_server", "--name", "billing-api",
		"--max-requests", "1000", "--window-seconds", "3600", "--lease", "always"); !strings.Contains(out, "lease") || !strings.Contains(out, "always") {
		t.Errorf("set --lease always over never:\n%s", out)
	}
	// A bad value is refused naming the field and the three values.
	res := r.Run("rate-limit-set", "--axis", "target", "--entity-type", "mcp_server", "--name", "billing-api",
		"--max-requests", "1000", "--window-seconds", "3600", "--lease", "sometimes")
	if res.Code != 2 || !strings.Contains(res.ErrOut, `--lease: must be one of auto, never, always (got "sometimes"); nothing was sent`) {
		t.Errorf("--lease sometimes: exit %d, stderr %q", res.Code, res.ErrOut)
	}
	if out := r.Must("rate-limit", "get", "target:mcp_server:billing-api:3600", "-o", "yaml"); !strings.Contains(out, "lease: always\n") || !strings.Contains(out, "version: 2\n") {
		t.Errorf("after the refused set:\n%s\nwant lease always, version 2", out)
	}
	// Export, apply back: unchanged; a file that changes it, one update.
	exported := r.Must("export")
	if !strings.Contains(exported, "lease: always") || strings.Count(exported, "lease:") != 1 {
		t.Errorf("export: want one lease, always (auto goes unsaid):\n%s", exported)
	}
	file := filepath.Join(t.TempDir(), "state.yaml")
	if err := os.WriteFile(file, []byte(exported), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := r.Must("apply", "-f", file); !strings.Contains(out, "created 0, updated 0, deleted 0") {
		t.Errorf("applying the export changed something:\n%s", out)
	}
	if err := os.WriteFile(file, []byte(strings.Replace(exported, "lease: always", "lease: never", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("diff", "-f", file); !strings.Contains(res.Out, "target:mcp_server:billing-api:3600") || !strings.Contains(res.Out, "lease") {
		t.Errorf("diff of lease never: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	r.Must("apply", "-f", file)
	if out := r.Must("rate-limit", "get", "target:mcp_server:billing-api:3600", "-o", "yaml"); !strings.Contains(out, "lease: never\n") {
		t.Errorf("after apply:\n%s\nwant lease never", out)
	}
	if out := r.Must("__complete", "rate-limit", "set", "--lease", ""); !strings.HasPrefix(out, "auto\nnever\nalways\n") {
		t.Errorf("completion of --lease:\n%s", out)
	}
	if out := r.Must("rate-limit-set", "--help"); !strings.Contains(out, "--lease") || !strings.Contains(out, "without that, never and always change") {
		t.Errorf("rate-limit-set --help does not say what --lease needs:\n%s", out)
	}
}
