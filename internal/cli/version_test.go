package cli_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/version"
)

// TestVersionSpellingsAgree: rlctl -v, rlctl --version and the first line
// of rlctl version print the client's version alike.
func TestVersionSpellingsAgree(t *testing.T) {
	r := clitest.StartParallel(t)
	want := "rlctl " + version.String() + "\n"
	for _, args := range [][]string{{"-v"}, {"--version"}} {
		if got := r.Must(args...); got != want {
			t.Errorf("rlctl %s printed %q, want %q", args[0], got, want)
		}
	}
	got := r.Must("version")
	if first, rest, _ := strings.Cut(got, "\n"); first+"\n" != want || !strings.HasPrefix(rest, "rlapi ") {
		t.Errorf("rlctl version printed %q, want %q then the server's line", got, want)
	}
}
