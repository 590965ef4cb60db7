package state_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
)

// Network memberships round-trip: apply stores them in canonical form,
// export writes them, and the export diffs clean; a bad CIDR refuses the
// whole file, naming the field.
func TestApplyExportDiffNetworks(t *testing.T) {
	t.Parallel()
	r := clitest.Start(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "networks.yaml", `definitions:
- {axis: caller, entity_type: group, name: anonymous, window_seconds: 60, user_max_requests: 60}
memberships:
- {subject_type: network, subject: "2001:DB8:42::/48", groups: [anonymous]}
- {subject_type: network, subject: 10.9.0.0/16, groups: [quarantine-callers], quarantine_reason: scanner}
`)
	got := r.Must("apply", "-f", file, "--quarantine")
	for _, want := range []string{"membership/network:2001:db8:42::/48 created\n", "quarantine/network:10.9.0.0/16 added\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("apply printed:\n%s\nwant %q", got, want)
		}
	}
	export := r.Must("export", "--include-quarantine")
	for _, want := range []string{"subject_type: network\n  subject: 2001:db8:42::/48\n", "subject: 10.9.0.0/16\n"} {
		if !strings.Contains(export, want) {
			t.Errorf("export lacks %q:\n%s", want, export)
		}
	}
	if res := r.RunWith(clitest.Opts{Stdin: export}, "diff", "-f", "-", "--quarantine"); res.Code != 0 {
		t.Errorf("export | diff -f -: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	if res := r.Run("diff", "-f", file, "--quarantine"); res.Code != 0 {
		t.Errorf("diff of the applied file (non-canonical spelling): exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}

	bad := writeFile(t, dir, "bad.yaml", `memberships:
- {subject_type: network, subject: 10.8.0.0/16, groups: [anonymous]}
- {subject_type: network, subject: 10.1.0.1/16, groups: [anonymous]}
`)
	res := r.Run("apply", "-f", bad)
	if res.Code == 0 || !strings.Contains(res.ErrOut, "subject: has host bits set: the network is 10.1.0.0/16") {
		t.Errorf("apply of a host-bits network: exit %d\n%s%s", res.Code, res.Out, res.ErrOut)
	}
	if res := r.Run("member", "get", "network:10.8.0.0/16"); res.Code != 4 {
		t.Errorf("the refused file stored its good network (exit %d)", res.Code)
	}
}
