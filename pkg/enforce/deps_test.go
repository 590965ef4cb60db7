package enforce_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreLinksNoBackend: a gateway that imports pkg/enforce links no
// database driver, no migration tool, no validator and none of rlctl's
// internal packages; the
// backends (pkg/enforce/postgres) are imported only by who picks them.
func TestCoreLinksNoBackend(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "github.com/rlctl/rlctl/pkg/enforce").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/jackc/", "github.com/go-playground/", "github.com/Masterminds/",
			"github.com/rlctl/rlctl/internal/", "github.com/jackc/tern", "sprig", "github.com/spf13/cobra",
			"github.com/charmbracelet/"} {
			if strings.Contains(dep, banned) {
				t.Errorf("pkg/enforce links %s", dep)
			}
		}
	}
}
