package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
)

// syncBuffer lets the test read what a running server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestServeRefusesSchemaBehind(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0"}, env(map[string]string{"DATABASE_URL": dsn}), &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code = %d, want 1; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "run 'rlapi migrate'") {
		t.Errorf("stderr = %q, want advice to run rlapi migrate", stderr.String())
	}
}

func TestMigrateThenServe(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	vars := env(map[string]string{"DATABASE_URL": dsn})
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"migrate"}, vars, &out, &errOut); code != 0 {
		t.Fatalf("migrate exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "migrated schema from version 0 to") {
		t.Errorf("migrate said %q", out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"migrate"}, vars, &out, &errOut); code != 0 || !strings.Contains(out.String(), "schema is current") {
		t.Errorf("second migrate: exit %d, said %q", code, out.String())
	}

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--addr", addr}, vars, &stdout, &stderr) }()

	var resp *http.Response
	var err error
	for range 100 {
		resp, err = http.Get("http://" + addr + "/readyz")
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		cancel()
		t.Fatalf("server never answered: %v; stderr: %s", err, stderr.String())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("readyz = %d, want 200", resp.StatusCode)
	}
	if !strings.Contains(stdout.String(), "rlapi listening on http://"+addr+" (version ") {
		t.Errorf("stdout = %q, want the listen address and the version", stdout.String())
	}
	// Once: a terminal or a journal shows stdout and stderr together.
	if n := strings.Count(stdout.String()+stderr.String(), "listening"); n != 1 {
		t.Errorf("\"listening\" said %d times, want once:\nstdout: %s\nstderr: %s", n, stdout.String(), stderr.String())
	}
	cancel() // as SIGTERM does
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exit code after shutdown = %d; stderr: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after its context ended")
	}
}

func TestTokenCreateWritesPrivateFile(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	file := filepath.Join(t.TempDir(), "admin.token")
	var out, errOut bytes.Buffer
	args := []string{"token", "create", "--name", "boot", "--role", "admin", "--output-file", file}
	if code := run(context.Background(), args, env(map[string]string{"DATABASE_URL": dsn}), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", info.Mode().Perm())
	}
	b, _ := os.ReadFile(file)
	if !strings.HasPrefix(string(b), "rlt_") || len(strings.TrimSpace(string(b))) < 40 {
		t.Errorf("token file holds %q, want an rlt_ token of at least 128 bits", b)
	}
	if out.Len() != 0 {
		t.Errorf("token leaked to stdout: %q", out.String())
	}
	// A second live token of the same name is refused without --replace.
	errOut.Reset()
	if code := run(context.Background(), args, env(map[string]string{"DATABASE_URL": dsn}), &out, &errOut); code != 1 {
		t.Errorf("duplicate name: exit %d, want 1", code)
	}
	args = append(args, "--replace")
	if code := run(context.Background(), args, env(map[string]string{"DATABASE_URL": dsn}), &out, &errOut); code != 0 {
		t.Errorf("--replace: exit %d: %s", code, errOut.String())
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string
	}{
		{nil, "missing command"},
		{[]string{"bogus"}, `unknown command "bogus"`},
		{[]string{"serve", "--nope"}, "unknown flag --nope"},
		{[]string{"token", "create", "--name", "bad name!"}, "name"},
		{[]string{"token", "create", "--name", "x", "--role", "root"}, "role"},
		{[]string{"migrate"}, "no database"},
		{[]string{"serve", "--max-client-conns", "0"}, "--max-client-conns: must be >= 1"},
		{[]string{"serve", "--grpc-addr", "127.0.0.1:0", "--grpc-max-conns", "0"}, "--grpc-max-conns: must be >= 1"},
		{[]string{"serve", "--grpc-addr", "127.0.0.1:0", "--grpc-max-streams", "0"}, "--grpc-max-streams: must be between 1 and"},
		{[]string{"serve", "--client-ip-header", "X-Client-IP"}, `--client-ip-header: client IP header "X-Client-IP": must be one of X-Forwarded-For, Forwarded, X-Real-IP`},
		{[]string{"serve", "--ipv6-prefix", "129"}, "--ipv6-prefix: must be between 1 and 128 (got 129)"},
		{[]string{"serve", "--gateway-auth-window", "1500ms"}, "--gateway-auth-window, --gateway-auth-lockout: window: must be whole seconds between 1s and 24h (got 1.5s)"},
		{[]string{"serve", "--gateway-auth-lockout", "-5m"}, "lockout: must be whole seconds between 1s and 24h (got -5m0s)"},
		{[]string{"serve", "--lockout-after", "-1"}, "--lockout-after: must be 0 (off) or a number of violations (got -1)"},
		{[]string{"serve", "--lockout-after", "5", "--lockout-duration", "-15m"}, "--lockout-duration: lockout: must be whole seconds between 1s and 720h (got -15m0s)"},
		{[]string{"serve", "--lockout-after", "5", "--lockout-within", "0s"}, "within: must be whole seconds between 1s and 24h (got 0s)"},
		{[]string{"serve", "--auth-lockout", "-1s"}, "--auth-lockout: lockout: must be whole seconds"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			code := run(context.Background(), c.args, env(nil), &out, &errOut)
			if code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			if !strings.Contains(errOut.String(), c.want) {
				t.Errorf("stderr = %q, want it to mention %q", errOut.String(), c.want)
			}
		})
	}
}

// The lockout flags take their defaults from the environment, as their help
// says, and a bad value is a usage error naming the variable.
func TestAuthFlagsHaveEnvironmentFallbacks(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	vars := env(map[string]string{"RLAPI_AUTH_MAX_FAILURES": "9", "RLAPI_AUTH_WINDOW": "2m", "RLAPI_AUTH_LOCKOUT": "7m",
		"RLAPI_TOKEN_CACHE_TTL": "3s", "RLAPI_DECISION_MAX_CONNS": "6"})
	if code := run(context.Background(), []string{"serve", "-h"}, vars, &out, &errOut); code != 0 {
		t.Fatalf("serve -h: exit %d", code)
	}
	help := errOut.String()
	for _, want := range []string{"(RLAPI_AUTH_MAX_FAILURES) (default 9)", "(RLAPI_AUTH_WINDOW) (default 2m0s)", "(RLAPI_AUTH_LOCKOUT) (default 7m0s)",
		"(default 3s)", "(RLAPI_DECISION_MAX_CONNS) (default 6)"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve -h lacks %q:\n%s", want, help)
		}
	}
	for key, val := range map[string]string{"RLAPI_AUTH_WINDOW": "soon", "RLAPI_AUTH_MAX_FAILURES": "five", "RLAPI_DECISION_MAX_CONNS": "1"} {
		errOut.Reset()
		code := run(context.Background(), []string{"serve"}, env(map[string]string{key: val, "DATABASE_URL": "postgres://127.0.0.1:1/x"}), &out, &errOut)
		want := key
		if key == "RLAPI_DECISION_MAX_CONNS" {
			want = "--decision-max-conns"
		}
		if code != 2 || !strings.Contains(errOut.String(), want) {
			t.Errorf("%s=%s: exit %d, stderr %q; want 2 naming %s", key, val, code, errOut.String(), want)
		}
	}
}

// -h prints each flag's default; DATABASE_URL's password must not be one.
func TestHelpRedactsTheDatabasePassword(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://rlctl:Pa55-word@db.internal:5432/rlctl?sslmode=disable",
		"postgresql://rlctl@db/rlctl?password=Pa55-word",
		"host=db user=rlctl password=Pa55-word dbname=rlctl",
		"host=db password='Pa55-word x' dbname=rlctl",
	} {
		for _, cmd := range [][]string{{"serve", "-h"}, {"migrate", "-h"}, {"token", "create", "-h"}} {
			var out, errOut bytes.Buffer
			code := run(context.Background(), cmd, env(map[string]string{"DATABASE_URL": dsn}), &out, &errOut)
			if code != 0 {
				t.Fatalf("%v: exit code %d: %s", cmd, code, errOut.String())
			}
			help := out.String() + errOut.String()
			if strings.Contains(help, "Pa55-word") {
				t.Errorf("rlapi %v with DATABASE_URL=%q prints the password:\n%s", cmd, dsn, help)
			}
			if !strings.Contains(help, "database-url") || !strings.Contains(help, "db") {
				t.Errorf("rlapi %v: help does not show the (redacted) database url:\n%s", cmd, help)
			}
		}
	}
}

// The redacted form is for display only: the flag still connects with the
// password it was given.
func TestDatabaseURLFlagKeepsThePassword(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"migrate", "--database-url", dsn}, env(nil), &out, &errOut); code != 0 {
		t.Fatalf("migrate --database-url: exit %d: %s", code, errOut.String())
	}
}

func TestTokenCreateBoundsExpiresIn(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"-1s", "87601h", "2562047h"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"token", "create", "--name", "x", "--expires-in", d}, env(nil), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "--expires-in: must be between 1s and") {
			t.Errorf("--expires-in %s: exit %d, stderr %q; want 2 naming the bound", d, code, errOut.String())
		}
	}
}

func TestMaxClientConnsFromTheEnvironment(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"serve"}, env(map[string]string{"RLAPI_MAX_CLIENT_CONNS": "lots"}), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "RLAPI_MAX_CLIENT_CONNS") {
		t.Errorf("RLAPI_MAX_CLIENT_CONNS=lots: exit %d, stderr %q; want 2 naming the variable", code, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	run(context.Background(), []string{"serve", "-h"}, env(map[string]string{"RLAPI_MAX_CLIENT_CONNS": "77"}), &out, &errOut)
	if !strings.Contains(errOut.String(), "(default 77)") {
		t.Errorf("serve -h with RLAPI_MAX_CLIENT_CONNS=77 does not show it as the default:\n%s", errOut.String())
	}
}

// startServe runs 'rlapi serve' on a free address until the test ends and
// returns the address once it answers, and its stderr.
func startServe(t *testing.T, vars func(string) string, args ...string) (string, *syncBuffer) {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve", "--addr", addr}, args...), vars, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop after its context ended")
		}
	})
	for range 200 {
		if strings.Contains(stdout.String(), "rlapi listening") {
			return addr, &stderr
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("serve never listened: %s", stderr.String())
	return "", nil
}

// getOn sends GET /healthz on c and reports whether an answer came within d.
func getOn(t *testing.T, c net.Conn, br *bufio.Reader, send bool, d time.Duration) bool {
	t.Helper()
	if send {
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: rlapi\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return true
}

// RLAPI_MAX_CLIENT_CONNS reaches the listener of 'rlapi serve': with a cap
// of 1, a second connection is served only once the first closes.
func TestServeCapsClientConnections(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	addr, stderr := startServe(t, env(map[string]string{"DATABASE_URL": dsn, "RLAPI_MAX_CLIENT_CONNS": "1"}))
	first, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if !getOn(t, first, bufio.NewReader(first), true, 30*time.Second) {
		t.Fatal("the first connection was not served")
	}
	second, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	br := bufio.NewReader(second)
	// Not being answered is the expected outcome: a slow machine cannot
	// fail this.
	if getOn(t, second, br, true, 500*time.Millisecond) {
		t.Fatal("a second connection was served while the cap of 1 was held")
	}
	first.Close()
	if !getOn(t, second, br, false, 30*time.Second) {
		t.Fatal("the waiting connection was not served after the first closed")
	}
	if strings.Contains(stderr.String(), "open file limit") {
		t.Errorf("warned about the file limit with a cap of 1: %s", stderr.String())
	}
}

// A cap above the open file limit would not protect anything: rlapi says so.
func TestServeWarnsWhenTheFileLimitIsBelowTheCap(t *testing.T) {
	t.Parallel()
	limit := openFileLimit()
	if limit == 0 || limit > 1<<40 {
		t.Skip("no usable open file limit on this system")
	}
	dsn := pgtest.NewMigratedDatabase(t)
	_, stderr := startServe(t, env(map[string]string{"DATABASE_URL": dsn}), "--max-client-conns", fmt.Sprint(limit))
	if !strings.Contains(stderr.String(), "level=WARN") || !strings.Contains(stderr.String(), "open file limit") {
		t.Errorf("no warning with --max-client-conns %d at an open file limit of %d: %s", limit, limit, stderr.String())
	}
}
