package main_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A day-long window: the test never straddles a window boundary (midnight
// UTC aside).
func stateFile(limit string) string {
	return `apiVersion: rlctl/v1
kind: State
definitions:
  - axis: target
    entity_type: mcp_server
    name: s
    window_seconds: 86400
    max_requests: ` + limit + `
memberships:
  - subject_type: user
    subject: mallory
    groups: [quarantine-callers]
    quarantine_reason: abuse
`
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// logBuffer collects the gateway's stderr so the test can wait for a line.
type logBuffer struct {
	mu    sync.Mutex
	b     strings.Builder
	added chan struct{}
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	select {
	case l.added <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestGatewayEnforcesFromAFile builds the example, runs it on a free port
// with a state file and the in-memory counters, and drives it through its
// real listener: the limit holds (429 after it), quarantine holds (403),
// raising the limit in the file takes effect without a restart, a broken
// edit is refused with the last good limit kept, and so is a file cut
// short before its memberships (the quarantine holds); each refused
// change is logged once and counted in /metrics.
func TestGatewayEnforcesFromAFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "filegateway")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	state := filepath.Join(dir, "state.yaml")
	writeFile(t, state, stateFile("3"))
	out, err := exec.Command(bin, "-file", state, "-max-shrink", "1.5").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "-max-shrink 1.5: must be above 0 and at most 1") {
		t.Errorf("-max-shrink 1.5: exit %d, %q; want 1 and the rule", code, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hang only
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-file", state, "-listen", "127.0.0.1:0", "-poll", "20ms")
	logs := &logBuffer{added: make(chan struct{}, 1)}
	cmd.Stderr = logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the address: %v (log: %s)", err, logs.String())
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q, want listening on <addr>", line)
	}
	base := "http://" + addr

	get := func(path, user string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.Header.Set("X-User", user)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // drained for reuse
		resp.Body.Close()
		return resp
	}
	status := func(path, user string) int { return get(path, user).StatusCode }

	if got := status("/healthz", ""); got != http.StatusOK {
		t.Fatalf("/healthz: %d", got)
	}
	for i := 1; i <= 3; i++ {
		resp := get("/mcp/s/search", "alice")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d of 3: %d, want 200", i, resp.StatusCode)
		}
	}
	resp := get("/mcp/s/search", "alice")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("call 4 of 3: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := status("/mcp/other/x", "alice"); got != http.StatusOK {
		t.Errorf("a target without a limit: %d, want 200", got)
	}
	if got := status("/mcp/other/x", "mallory"); got != http.StatusForbidden {
		t.Errorf("a quarantined caller: %d, want 403", got)
	}

	// Raise the limit to 5: the count (3) stays, so two more pass. Denied
	// calls take nothing, so asking until the change shows is harmless.
	untilAlicePasses := func(what string) {
		t.Helper()
		for status("/mcp/s/search", "alice") != http.StatusOK {
			select {
			case <-ctx.Done():
				t.Fatalf("%s never took effect", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	writeFile(t, state, stateFile("5"))
	untilAlicePasses("the raised limit")
	if got := status("/mcp/s/search", "alice"); got != http.StatusOK {
		t.Errorf("call 5 of 5: %d, want 200", got)
	}
	if got := status("/mcp/s/search", "alice"); got != http.StatusTooManyRequests {
		t.Errorf("call 6 of 5: %d, want 429", got)
	}

	// A broken edit is refused and logged; the limit of 5 stays. A second
	// one, refused for the same reason, has its own line.
	refusals := func() int { return strings.Count(logs.String(), "state file refused") }
	waitLog := func(what string, done func() bool) {
		t.Helper()
		for !done() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s never logged", what)
			case <-logs.added:
			}
		}
	}
	writeFile(t, state, stateFile("five"))
	waitLog("the broken edit", func() bool { return refusals() == 1 })
	if got := status("/mcp/s/search", "alice"); got != http.StatusTooManyRequests {
		t.Errorf("after a broken edit: %d, want 429 (the last good limit, 5, used up)", got)
	}
	if got := status("/mcp/other/x", "mallory"); got != http.StatusForbidden {
		t.Errorf("after a broken edit, the quarantined caller: %d, want 403", got)
	}
	writeFile(t, state, stateFile("six"))
	waitLog("the second broken edit", func() bool { return refusals() == 2 })

	// The file cut at a line boundary before its memberships parses, and
	// would lift mallory's quarantine: refused, at WARN, and counted.
	full := stateFile("5")
	reloads := strings.Count(logs.String(), "state file reloaded")
	writeFile(t, state, full[:strings.Index(full, "memberships:")])
	waitLog("the cut file", func() bool {
		return refusals() == 3 || strings.Count(logs.String(), "state file reloaded") > reloads
	})
	if got := status("/mcp/other/x", "mallory"); got != http.StatusForbidden {
		t.Errorf("after the file was cut before its memberships, the quarantined caller: %d, want 403", got)
	}
	if got := status("/mcp/s/search", "alice"); got != http.StatusTooManyRequests {
		t.Errorf("after the file was cut: %d, want 429 (the last good limit, 5, used up)", got)
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "reason=quarantine") && !strings.Contains(line, "level=WARN") {
			t.Errorf("the cut file's refusal is not a WARN: %s", line)
		}
	}
	metrics := func() string {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	m := metrics()
	for _, want := range []string{`rlctl_filesource_refused_total{reason="invalid"} 2`, `rlctl_filesource_refused_total{reason="quarantine"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// A good file loads again (alice passes under 7), and by then every
	// poll of the refused files is over: still one line for each.
	writeFile(t, state, stateFile("7"))
	untilAlicePasses("the good file")
	if n := refusals(); n != 3 {
		t.Errorf("%d refusal lines for three refused changes, want 3", n)
	}
}
