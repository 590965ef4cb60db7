// Package scripts_test runs the scripts of this directory as make runs
// them, with what they would touch on the machine (PATH, the user's
// rlctl config, root's apt-get) swapped for directories of the test's own.
package scripts_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// testdepsRun runs scripts/testdeps.sh with PATH set to bin only (a
// directory of the test's own holding symlinks to the few tools the
// script uses, plus whatever fakes the case puts there), so that the
// machine's own redis-server, nginx and apt-get are out of sight and
// nothing is installed.
type testdepsRun struct {
	dir, bin, sbin, policy string
}

func newTestdepsRun(t *testing.T) *testdepsRun {
	t.Helper()
	dir := t.TempDir()
	r := &testdepsRun{dir: dir, bin: filepath.Join(dir, "bin"), sbin: filepath.Join(dir, "sbin"), policy: filepath.Join(dir, "policy-rc.d")}
	for _, d := range []string{r.bin, r.sbin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range []string{"mktemp", "tail", "rm", "chmod", "cat", "id"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(r.bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	// systemd-analyze and buildah are there unless a case removes them:
	// the cases below are about the other programs.
	r.fake(t, r.bin, "systemd-analyze", "exit 0")
	r.fake(t, r.bin, "buildah", "exit 0")
	return r
}

// fake puts an executable script named name into dir.
func (r *testdepsRun) fake(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (r *testdepsRun) run(t *testing.T, uid string) (string, int) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "testdeps.sh")
	cmd.Env = []string{
		"PATH=" + r.bin, "TMPDIR=" + r.dir, "TESTDEPS_UID=" + uid,
		"TESTDEPS_SBIN=" + r.sbin, "TESTDEPS_POLICY_RC_D=" + r.policy,
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestTestdepsFindsOrNamesWhatIsMissing: make test's first step is silent
// when redis-server, redis-cli and nginx are there (nginx in /usr/sbin
// too, outside a user's PATH), and otherwise, not being root, fails with
// one line naming the Debian packages and the command that installs them.
func TestTestdepsFindsOrNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bin     []string // fakes in PATH
		sbin    []string // fakes in the sbin directory
		drop    string   // a fake newTestdepsRun puts in place, removed
		uid     string
		want    string // the one line; empty: silent success
		wantPkg string
	}{
		{name: "everything there", bin: []string{"redis-server", "redis-cli", "nginx"}, uid: "1000"},
		{name: "nginx in sbin only", bin: []string{"redis-server", "redis-cli"}, sbin: []string{"nginx"}, uid: "1000"},
		{name: "nothing, not root", uid: "1000",
			want: "testdeps: error: make test needs redis-server, redis-cli, nginx, systemd-analyze and buildah; missing Debian packages: redis-server nginx: sudo apt-get install redis-server nginx (as root make test installs them itself)"},
		{name: "no redis-cli", bin: []string{"redis-server", "nginx"}, uid: "1000", wantPkg: "missing Debian packages: redis-tools: sudo apt-get install redis-tools"},
		{name: "no nginx", bin: []string{"redis-server", "redis-cli"}, uid: "1000", wantPkg: "missing Debian packages: nginx: sudo apt-get install nginx"},
		{name: "no systemd-analyze", bin: []string{"redis-server", "redis-cli", "nginx"}, drop: "systemd-analyze", uid: "1000",
			wantPkg: "missing Debian packages: systemd: sudo apt-get install systemd"},
		{name: "no buildah", bin: []string{"redis-server", "redis-cli", "nginx"}, drop: "buildah", uid: "1000",
			wantPkg: "missing Debian packages: buildah: sudo apt-get install buildah"},
		{name: "root without apt-get", uid: "0", wantPkg: "missing Debian packages: redis-server nginx: no apt-get here: install the packages that provide them\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newTestdepsRun(t)
			for _, f := range tc.bin {
				r.fake(t, r.bin, f, "exit 0")
			}
			for _, f := range tc.sbin {
				r.fake(t, r.sbin, f, "exit 0")
			}
			if tc.drop != "" {
				if err := os.Remove(filepath.Join(r.bin, tc.drop)); err != nil {
					t.Fatal(err)
				}
			}
			out, code := r.run(t, tc.uid)
			switch {
			case tc.want == "" && tc.wantPkg == "":
				if code != 0 || out != "" {
					t.Errorf("exit status %d, output %q: want 0 and nothing", code, out)
				}
			default:
				lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
				if code != 1 || len(lines) != 1 {
					t.Errorf("exit status %d, output %q: want 1 and one line", code, out)
				}
				if tc.want != "" && lines[0] != tc.want {
					t.Errorf("line %q\nwant %q", lines[0], tc.want)
				}
				if tc.wantPkg != "" && !strings.Contains(out, tc.wantPkg) {
					t.Errorf("output %q: want it to hold %q", out, tc.wantPkg)
				}
			}
		})
	}
}

// TestTestdepsInstallsAsRoot: as root with apt-get, the missing packages
// are installed (a fake apt-get records its calls and puts the programs
// in place) with a policy-rc.d that forbids starting services present
// during the install and gone after it; a failed install removes it too
// and fails naming the packages.
func TestTestdepsInstallsAsRoot(t *testing.T) {
	t.Parallel()
	t.Run("installs", func(t *testing.T) {
		t.Parallel()
		r := newTestdepsRun(t)
		r.fake(t, r.bin, "redis-cli", "exit 0")
		calls := filepath.Join(r.dir, "calls")
		r.fake(t, r.bin, "apt-get", `echo "DEBIAN_FRONTEND=$DEBIAN_FRONTEND $*" >>`+calls+`
if [ "$1" = install ]; then
	cat `+r.policy+` >>`+calls+`
	for p in redis-server nginx; do printf '#!/bin/bash\n' >`+r.bin+`/$p; chmod +x `+r.bin+`/$p; done
	echo "Setting up nginx (noise a user need not see)"
fi`)
		out, code := r.run(t, "0")
		if code != 0 || out != "testdeps: installing Debian's redis-server nginx for make test (one time)\n" {
			t.Errorf("exit status %d, output %q: want 0 and one line saying what it installs", code, out)
		}
		got, err := os.ReadFile(calls)
		if err != nil {
			t.Fatal(err)
		}
		want := "DEBIAN_FRONTEND= update -qq\nDEBIAN_FRONTEND=noninteractive install -y -qq redis-server nginx\n#!/bin/sh\nexit 101\n"
		if string(got) != want {
			t.Errorf("apt-get calls (and policy-rc.d during install):\n%s\nwant:\n%s", got, want)
		}
		if _, err := os.Stat(r.policy); !os.IsNotExist(err) {
			t.Errorf("policy-rc.d left in place after the install (stat: %v)", err)
		}
		if out, code := r.run(t, "0"); code != 0 || out != "" {
			t.Errorf("second run: exit status %d, output %q: want 0 and nothing", code, out)
		}
	})
	t.Run("install fails", func(t *testing.T) {
		t.Parallel()
		r := newTestdepsRun(t)
		r.fake(t, r.bin, "apt-get", `[ "$1" = install ] && { echo "E: Unable to locate package nginx"; exit 100; }; exit 0`)
		out, code := r.run(t, "0")
		if code != 1 || !strings.Contains(out, "E: Unable to locate package nginx\n") ||
			!strings.HasSuffix(out, "testdeps: error: apt-get install redis-server nginx failed\n") {
			t.Errorf("exit status %d, output %q: want 1, apt-get's error and a line naming the packages", code, out)
		}
		if _, err := os.Stat(r.policy); !os.IsNotExist(err) {
			t.Errorf("policy-rc.d left in place after a failed install (stat: %v)", err)
		}
	})
	t.Run("keeps a policy-rc.d it did not write", func(t *testing.T) {
		t.Parallel()
		r := newTestdepsRun(t)
		if err := os.WriteFile(r.policy, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		r.fake(t, r.bin, "apt-get", `[ "$1" = install ] && for p in redis-server redis-cli nginx; do printf '#!/bin/bash\n' >`+r.bin+`/$p; chmod +x `+r.bin+`/$p; done; exit 0`)
		if out, code := r.run(t, "0"); code != 0 {
			t.Errorf("exit status %d, output %q", code, out)
		}
		if got, err := os.ReadFile(r.policy); err != nil || string(got) != "#!/bin/sh\nexit 0\n" {
			t.Errorf("the machine's own policy-rc.d: %q, %v; want it untouched", got, err)
		}
	})
}
