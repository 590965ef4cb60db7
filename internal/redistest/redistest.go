// Package redistest gives tests the Redis servers make test starts
// (scripts/redisdev.sh), their URLs from the environment, and servers of a
// test's own (Start) for the tests that stall or reconfigure one.
package redistest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/testenv"
)

// URL is the URL in the environment variable name: REDIS_URL (the
// standalone server) or REDIS_CLUSTER_URL (the cluster). Unset, the test
// fails under make test and CI=true, and is skipped otherwise
// (testenv.Missing).
func URL(t testing.TB, name string) string {
	t.Helper()
	u := os.Getenv(name)
	if u == "" {
		testenv.Missing(t, name+" is unset: run make test, or export "+name+"=$(scripts/redisdev.sh "+
			map[string]string{"REDIS_URL": "url", "REDIS_CLUSTER_URL": "cluster-url"}[name]+")")
	}
	return u
}

// Server is a redis-server process of one test's own (Start): the test may
// stop it (SIGSTOP), resume it or reconfigure it without touching the
// shared servers.
type Server struct {
	// URL is its redis:// URL.
	URL string
	// Process is the redis-server process, for signals. Restart replaces
	// it.
	Process *os.Process

	bin, dir string
	port     int
	args     []string
	exited   chan struct{} // closed when Process has exited
}

// Start runs a redis-server of the test's own on a free loopback port,
// with args added to its command line (say "--maxmemory", "2mb"), in the
// foreground, persisting nothing; it is killed (resumed first, had the
// test stopped it) when the test ends. Without redis-server the test is
// skipped, or fails under CI=true.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server is not installed: this test starts a server of its own"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: the Redis tests may not be skipped)")
		}
		t.Skip(msg)
	}
	s := &Server{bin: bin, dir: t.TempDir(), args: args}
	var lastErr error
	// A port found free may be taken before the server binds it: try again.
	for range 5 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s.port = port
		if lastErr = s.start(t); lastErr == nil {
			s.URL = "redis://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			return s
		}
	}
	t.Fatalf("redis-server did not start: %v", lastErr)
	return nil
}

// start runs the server on s.port and waits for its PONG.
func (s *Server) start(t testing.TB) error {
	cmd := exec.Command(s.bin, append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no"}, s.args...)...)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := waitPong(net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)), exited); err != nil {
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%w\n%s", err, log.String())
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-exited
	})
	s.Process, s.exited = cmd.Process, exited
	return nil
}

// Restart kills the server (SIGKILL: no save, as in a crash) and starts it
// again on the same port with the same arguments. Persisting nothing, it
// comes back empty, with a new run_id.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	_ = s.Process.Signal(syscall.SIGCONT)
	if err := s.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-s.exited
	if err := s.start(t); err != nil {
		t.Fatalf("redis-server did not restart on port %d: %v", s.port, err)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitPong waits until the server at addr answers PING, for at most 30 s
// (a bound on a hang, not a timing), or until it exits.
func waitPong(addr string, exited <-chan struct{}) error {
	end := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			_, err = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			if err == nil {
				_, err = io.ReadFull(c, buf)
			}
			c.Close()
			if err == nil && string(buf) == "+PONG\r\n" {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("redis-server exited")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(end) {
			return errors.New("redis-server did not answer PING within 30 s")
		}
	}
}

// Scratch starts a throwaway Redis deployment of the test's own with
// scripts/redisdev.sh (kind: standalone, cluster or sentinel, for its
// scratch-KIND command), its data in a directory of the test's own, and
// stops it when the test ends; it returns the directory (where each
// server's port and pid are) and the deployment's URL. The test may kill
// any of its servers. Without redis-server the test is skipped, or fails
// under make test and CI=true (testenv.Missing).
func Scratch(t testing.TB, kind string) (dir, url string) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		testenv.Missing(t, "redis-server is not installed: this test starts throwaway servers with scripts/redisdev.sh (apt-get install redis-server)")
	}
	dir = t.TempDir()
	url = Redisdev(t, "scratch-"+kind, dir)
	t.Cleanup(func() { Redisdev(t, "scratch-stop", dir) })
	return dir, url
}

// redisdevPath is scripts/redisdev.sh of the module the test runs in.
func redisdevPath(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "scripts", "redisdev.sh")
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s: cannot find scripts/redisdev.sh", wd)
		}
	}
}

// Redisdev runs scripts/redisdev.sh with args (say "scratch-stop", dir)
// and returns what it printed, failing the test if it fails.
func Redisdev(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(redisdevPath(t), args...)
	// The scratch servers are the script's own, never the shared ones.
	cmd.Env = append(os.Environ(), "REDIS_URL=", "REDIS_CLUSTER_URL=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("redisdev.sh %v: %v\n%s", args, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
