package state_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

// A file that names no algorithm means fixed_window: it diffs as unchanged
// against a stored fixed window, whether the file or the server names it,
// on the server's dry run and on the client's.
func TestDiffAlgorithmDefault(t *testing.T) {
	r := clitest.StartParallel(t)
	seed(t, r)
	dir := t.TempDir()
	unnamed := writeFile(t, dir, "unnamed.yaml", `definitions:
- axis: caller
  entity_type: group
  name: developers
  window_seconds: 60
  user_max_requests: 100
  agent_max_requests: 50
`)
	named := writeFile(t, dir, "named.yaml", `definitions:
- axis: caller
  entity_type: group
  name: developers
  window_seconds: 60
  user_max_requests: 100
  agent_max_requests: 50
  algorithm: fixed_window
`)
	for _, file := range []string{unnamed, named} {
		for _, args := range [][]string{{"diff", "-f", file}, {"apply", "-f", file, "--dry-run=client"}} {
			res := r.Run(args...)
			if res.Code != 0 || res.Out != summary(0, 0, 0, 1) {
				t.Errorf("rlctl %s: exit %d\n%s%s", strings.Join(args, " "), res.Code, res.Out, res.ErrOut)
			}
		}
	}
	// Export writes no algorithm for fixed windows: files stay as they were.
	if out := r.Must("export"); strings.Contains(out, "algorithm:") {
		t.Errorf("export of fixed windows names an algorithm:\n%s", out)
	}
}

// Changing a definition's algorithm and burst in a file is one
// "configured" line naming both; export writes them and diffs clean.
func TestApplyExportDiffAlgorithm(t *testing.T) {
	r := clitest.StartParallel(t)
	seed(t, r)
	file := writeFile(t, t.TempDir(), "bucket.yaml", `definitions:
- axis: target
  entity_type: mcp_server
  name: mcpgw
  window_seconds: 60
  max_requests: 500
  algorithm: token_bucket
  burst: 40
  description: the main gateway
  enabled: true
`)
	want := "definition/target:mcp_server:mcpgw:60 configured: algorithm: \"fixed_window\" -> \"token_bucket\", burst: (none) -> 40\n"
	for _, args := range [][]string{{"diff", "-f", file}, {"apply", "-f", file, "--dry-run=client"}} {
		res := r.Run(args...)
		if !strings.HasPrefix(res.Out, want) {
			t.Errorf("rlctl %s: exit %d\n%s%s\nwant first line %q", strings.Join(args, " "), res.Code, res.Out, res.ErrOut, want)
		}
	}
	if got := r.Must("apply", "-f", file); got != want+summary(0, 1, 0, 0) {
		t.Errorf("apply printed:\n%s", got)
	}
	export := r.Must("export")
	if !strings.Contains(export, "  algorithm: token_bucket\n  burst: 40\n") {
		t.Errorf("export does not carry the algorithm and burst:\n%s", export)
	}
	if res := r.RunWith(clitest.Opts{Stdin: export}, "diff", "-f", "-"); res.Code != 0 {
		t.Errorf("export | diff -f -: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
}

// A file breaking the algorithm rules is refused whole before anything is
// sent (exit 2, naming the file and the field), by rlctl's own check with
// validate's rules (the server's), for apply, diff and the client dry run
// alike. Nothing changes.
func TestApplyAlgorithmRefused(t *testing.T) {
	r := clitest.StartParallel(t)
	seed(t, r)
	before := r.Must("export", "--include-quarantine")
	dir := t.TempDir()
	for _, tt := range []struct{ name, def, field string }{
		{"unknown", "{axis: target, entity_type: mcp_server, name: kb, window_seconds: 60, max_requests: 10, algorithm: leaky_bucket}", "definitions[1].algorithm"},
		{"zero", "{axis: target, entity_type: mcp_server, name: kb, window_seconds: 60, max_requests: 10, algorithm: token_bucket, burst: 0}", "definitions[1].burst"},
		{"axis", "{axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_requests: 30, algorithm: token_bucket, burst: 5}", "definitions[1].burst"},
		{"fixed", "{axis: caller, entity_type: group, name: g, window_seconds: 60, user_max_requests: 30, user_burst: 5}", "definitions[1].user_burst"},
	} {
		file := writeFile(t, dir, tt.name+".yaml", "definitions:\n- {axis: target, entity_type: mcp_server, name: fine, window_seconds: 60, max_requests: 10}\n- "+tt.def+"\n")
		for _, args := range [][]string{{"apply", "-f", file}, {"diff", "-f", file}, {"apply", "-f", file, "--dry-run=client"}} {
			res := r.Run(args...)
			if res.Code != 2 || !strings.Contains(res.ErrOut, file+": "+tt.field) || !strings.Contains(res.ErrOut, "nothing was sent") {
				t.Errorf("rlctl %s: exit %d, want 2 naming %s in %s\nstderr: %s", strings.Join(args, " "), res.Code, tt.field, file, res.ErrOut)
			}
		}
	}
	if after := r.Must("export", "--include-quarantine"); after != before {
		t.Error("a refused apply changed the server")
	}
}
