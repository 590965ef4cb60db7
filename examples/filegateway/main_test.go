package main_test

import (
	"bufio"
	"context"
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

// TestGatewayEnforcesFromAFile builds the example, runs it on a free port
// with a state file and the in-memory counters, and drives it through its
// real listener: the limit holds (429 after it), quarantine holds (403),
// raising the limit in the file takes effect without a restart, and a
// broken edit is refused with the last good limit kept.
func TestGatewayEnforcesFromAFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "filegateway")
	build := exec.Command("go", "build", "-tags", "seams", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	state := filepath.Join(dir, "state.yaml")
	writeFile(t, state, stateFile("3"))

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
	writeFile(t, state, stateFile("5"))
	for status("/mcp/s/search", "alice") != http.StatusOK {
		select {
		case <-ctx.Done():
			t.Fatal("the raised limit never took effect")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got := status("/mcp/s/search", "alice"); got != http.StatusOK {
		t.Errorf("call 5 of 5: %d, want 200", got)
	}
	if got := status("/mcp/s/search", "alice"); got != http.StatusTooManyRequests {
		t.Errorf("call 6 of 5: %d, want 429", got)
	}

	// A broken edit is refused and logged; the limit of 5 stays.
	writeFile(t, state, stateFile("five"))
	for !strings.Contains(logs.String(), "state file refused") {
		select {
		case <-ctx.Done():
			t.Fatal("the broken edit was never reported")
		case <-logs.added:
		}
	}
	if got := status("/mcp/s/search", "alice"); got != http.StatusTooManyRequests {
		t.Errorf("after a broken edit: %d, want 429 (the last good limit, 5, used up)", got)
	}
	if got := status("/mcp/other/x", "mallory"); got != http.StatusForbidden {
		t.Errorf("after a broken edit, the quarantined caller: %d, want 403", got)
	}
}
