package scripts_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/testenv"
)

// checkout copies the Makefile and the scripts into a directory of the
// test's own, a checkout whose .rl/ (and so whose private servers) belong
// to the test alone. The directory and its parents are made traversable
// so that, as root, the postgres user can reach the cluster under .rl/.
func checkout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"../Makefile", "devdb.sh", "redisdev.sh", "test.sh"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, "scripts", f)
		if f == "../Makefile" {
			to = filepath.Join(dir, "Makefile")
		}
		if err := os.WriteFile(to, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// in runs a command line in the checkout dir, with none of the URLs of
// servers the caller may have exported; it returns stdout, stderr and the
// exit status.
func in(t *testing.T, dir, line string, env ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestDevServersQuietAndAccounted: creating the private PostgreSQL says
// what it creates and starts, in two lines (not initdb's report and its
// advice to run pg_ctl); make db-status answers without make's error
// whether the cluster runs or not; and make test's last line names what
// still runs and how to stop it, and says nothing once all is stopped.
func TestDevServersQuietAndAccounted(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Missing(t, "redis-server is not installed: apt-get install redis-server")
	}
	t.Parallel()
	dir := checkout(t)
	t.Cleanup(func() {
		in(t, dir, "scripts/devdb.sh stop; scripts/redisdev.sh stop")
	})

	url, stderr, code := in(t, dir, "scripts/devdb.sh start")
	if code != 0 || !strings.HasPrefix(url, "postgres://rlctl:") {
		t.Fatalf("devdb.sh start: exit status %d, stdout %q, stderr:\n%s", code, url, stderr)
	}
	if l := lines(stderr); len(l) != 2 || !strings.HasPrefix(l[0], "devdb: creating a private PostgreSQL cluster in ") ||
		!strings.HasPrefix(l[1], "devdb: starting PostgreSQL on 127.0.0.1:") {
		t.Errorf("devdb.sh start, first time, said:\n%s\nwant two lines: creating, starting", stderr)
	}
	// Only the standalone Redis: a cluster URL given is not started.
	if _, stderr, code := in(t, dir, "scripts/redisdev.sh url", "REDIS_CLUSTER_URL=redis+cluster://127.0.0.1:1"); code != 0 {
		t.Fatalf("redisdev.sh url: exit status %d:\n%s", code, stderr)
	}

	out, stderr, code := in(t, dir, "make db-status")
	if code != 0 || !strings.Contains(stderr, "devdb: running on 127.0.0.1:") {
		t.Errorf("make db-status, running: exit status %d, output:\n%s%s", code, out, stderr)
	}
	out, _, _ = in(t, dir, "source scripts/test.sh && still_running")
	if want := "still running: the private PostgreSQL (make db-stop) and 1 private redis-server process (make redis-stop); make clean stops them and deletes their data\n"; out != want {
		t.Errorf("make test's last line:\n%q\nwant\n%q", out, want)
	}

	in(t, dir, "scripts/devdb.sh stop; scripts/redisdev.sh stop")
	out, stderr, code = in(t, dir, "make db-status")
	if code != 0 || strings.Contains(stderr, "Error") || !strings.Contains(stderr, "devdb: stopped; data in ") {
		t.Errorf("make db-status, stopped: exit status %d, output:\n%s%s\nwant 0 and a line saying stopped, no make error", code, out, stderr)
	}
	if out, _, _ := in(t, dir, "source scripts/test.sh && still_running"); out != "" {
		t.Errorf("make test's last line with nothing running: %q, want none", out)
	}
}

// TestScratchClusterQuiet: starting a Redis Cluster says so in one line,
// not in the 45 lines (coloured on a terminal) of redis-cli --cluster
// create, which make test printed before the first ok line.
func TestScratchClusterQuiet(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Missing(t, "redis-server is not installed: apt-get install redis-server")
	}
	t.Parallel()
	dir := t.TempDir()
	t.Cleanup(func() { in(t, ".", "bash redisdev.sh scratch-stop "+dir) })
	url, stderr, code := in(t, ".", "bash redisdev.sh scratch-cluster "+dir)
	if code != 0 || !strings.HasPrefix(url, "redis+cluster://") {
		t.Fatalf("scratch-cluster: exit status %d, stdout %q, stderr:\n%s", code, url, stderr)
	}
	if l := lines(stderr); len(l) != 1 || !strings.HasPrefix(l[0], "redisdev: starting a Redis Cluster (3 masters, 3 replicas) on 127.0.0.1:") {
		t.Errorf("scratch-cluster said:\n%s\nwant one line", stderr)
	}
}

// TestScratchSentinel: scratch-sentinel prints one redis+sentinel:// URL
// of three sentinels and the master set rlctl, says what it started in
// one line, answers the same URL when asked again while the set runs,
// and scratch-stop leaves none of the five servers listening.
func TestScratchSentinel(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Missing(t, "redis-server is not installed: apt-get install redis-server")
	}
	t.Parallel()
	dir := t.TempDir()
	t.Cleanup(func() { in(t, ".", "bash redisdev.sh scratch-stop "+dir) })
	url, stderr, code := in(t, ".", "bash redisdev.sh scratch-sentinel "+dir)
	url = strings.TrimSpace(url)
	if code != 0 || !strings.HasPrefix(url, "redis+sentinel://") || !strings.HasSuffix(url, "/rlctl") || strings.Count(url, ",") != 2 {
		t.Fatalf("scratch-sentinel: exit status %d, stdout %q, stderr:\n%s", code, url, stderr)
	}
	if l := lines(stderr); len(l) != 1 || !strings.HasPrefix(l[0], "redisdev: starting a Redis master, replica and three sentinels on 127.0.0.1:") {
		t.Errorf("scratch-sentinel said:\n%s\nwant one line", stderr)
	}
	again, _, code := in(t, ".", "bash redisdev.sh scratch-sentinel "+dir)
	if code != 0 || strings.TrimSpace(again) != url {
		t.Errorf("scratch-sentinel again: exit status %d, %q, want the running set's %q", code, again, url)
	}
	var ports []string
	for _, node := range []string{"master", "replica", "sentinel0", "sentinel1", "sentinel2"} {
		p, err := os.ReadFile(filepath.Join(dir, node, "port"))
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, strings.TrimSpace(string(p)))
	}
	if _, stderr, code := in(t, ".", "bash redisdev.sh scratch-stop "+dir); code != 0 {
		t.Fatalf("scratch-stop: exit status %d:\n%s", code, stderr)
	}
	for _, p := range ports {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+p, time.Second); err == nil {
			c.Close()
			t.Errorf("after scratch-stop, 127.0.0.1:%s still accepts connections", p)
		}
	}
}
