package scripts_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesABusyAddress: a second make run, while the first serves,
// stops at once with one line saying that the address is taken and that
// RLAPI_ADDR serves elsewhere, instead of migrating and then ending in
// rlapi's "bind: address already in use".
func TestRunRefusesABusyAddress(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command("bash", "run.sh")
	// No DATABASE_URL, no bin/: the script must stop before it needs them.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "RLAPI_ADDR=" + ln.Addr().String()}
	out, err := cmd.CombinedOutput()
	want := "run.sh: " + ln.Addr().String() + " is already in use (another make run?): stop it, or serve elsewhere with RLAPI_ADDR, e.g. RLAPI_ADDR=127.0.0.1:8090 make run\n"
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || string(out) != want {
		t.Errorf("run.sh on a busy address: %v, output:\n%s\nwant exit status 1 and:\n%s", err, out, want)
	}
}

// TestForgetContext: make clean deletes the context make run wrote for
// this checkout (its token is deleted with .rl/), and leaves the user's
// other contexts alone; with no such context it says nothing.
func TestForgetContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rlctl := filepath.Join(dir, "rlctl")
	if out, err := exec.Command("go", "build", "-o", rlctl, "../cmd/rlctl").CombinedOutput(); err != nil {
		t.Fatalf("build rlctl: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "config.yaml")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "RLCTL_CONFIG=" + cfg, "RLCTL=" + rlctl}
	sh := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	ctx := strings.TrimSpace(sh(`source run.sh && context_name "$(cd .. && pwd)"`))
	sh(`"$RLCTL" config set-context mine --server https://rl.example --token-file /dev/null`)
	sh(`"$RLCTL" config set-context ` + ctx + ` --server http://127.0.0.1:8080 --token-file ` + root + `/.rl/admin.token --use`)

	out := sh("bash run.sh forget-context")
	if !strings.Contains(out, `Deleted context "`+ctx+`"`) {
		t.Errorf("forget-context said:\n%s\nwant that it deleted %s", out, ctx)
	}
	view := sh(`"$RLCTL" config view -o json`)
	if strings.Contains(view, ctx) || !strings.Contains(view, `"mine"`) {
		t.Errorf("config after forget-context:\n%s\nwant %s gone and mine kept", view, ctx)
	}
	if out := sh("bash run.sh forget-context"); out != "" {
		t.Errorf("forget-context with nothing to forget said %q, want nothing", out)
	}
}

// TestLockoutHint: make run says how to lift the lockout of the address
// its own clients call from (five mistyped tokens lock the loopback out,
// the admin's valid token too), with a command that works while the
// address is locked: rlapi through the database, not the API.
func TestLockoutHint(t *testing.T) {
	t.Parallel()
	for addr, host := range map[string]string{"127.0.0.1:8080": "127.0.0.1", "0.0.0.0:8090": "127.0.0.1", "[::1]:8080": "::1", "[::]:8080": "::1"} {
		cmd := exec.Command("bash", "-c", `source run.sh && lockout_hint "$1"`, "hint", addr)
		out, err := cmd.CombinedOutput()
		want := "DATABASE_URL=$(scripts/devdb.sh url) bin/rlapi auth-lockout lift " + host + "\n"
		if err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "bin/rlctl auth-lockout lift ADDRESS") {
			t.Errorf("lockout_hint %s: %v\n%s\nwant a line ending in %q and the rlctl command", addr, err, out, want)
		}
	}
}
