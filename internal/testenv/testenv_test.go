package testenv_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/testenv"
)

// TestMissing runs a test that needs a missing server in a child test
// binary under each setting: by hand it skips; under make test
// (RLCTL_REQUIRE_SERVERS=1) and CI=true it fails, naming what is missing.
func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "--- SKIP: TestMissingServer"},
		{[]string{"RLCTL_REQUIRE_SERVERS=1"}, "--- FAIL: TestMissingServer"},
		{[]string{"CI=true"}, "--- FAIL: TestMissingServer"},
		{[]string{"RLCTL_REQUIRE_SERVERS=0", "CI=false"}, "--- SKIP: TestMissingServer"},
	} {
		t.Run(strings.Join(append([]string{"env"}, tc.env...), " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMissingServer$", "-test.v")
			cmd.Env = []string{"TESTENV_CHILD=1", "PATH=" + os.Getenv("PATH")}
			cmd.Env = append(cmd.Env, tc.env...)
			out, _ := cmd.CombinedOutput()
			if !strings.Contains(string(out), tc.want) || !strings.Contains(string(out), "the example server is missing") {
				t.Errorf("child test with %v:\n%s\nwant %q and the message", tc.env, out, tc.want)
			}
		})
	}
}

// TestMissingServer is the child of TestMissing; run on its own it does
// nothing.
func TestMissingServer(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "1" {
		return
	}
	testenv.Missing(t, "the example server is missing")
	t.Error("Missing returned")
}
