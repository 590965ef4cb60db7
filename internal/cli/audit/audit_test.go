package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/audit"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// setLimit puts a target limit on the mcp_server name as tok.
func setLimit(h *clitest.Rlctl, tok, name string, limit int) {
	h.T.Helper()
	d := rl.Definition{Axis: rl.AxisTarget, EntityType: rl.EntityMCPServer, Name: name, WindowSeconds: 60, MaxRequests: &limit, Enabled: true}
	if _, err := h.ClientAs(tok).PutDefinition(context.Background(), d, client.WriteOptions{}); err != nil {
		h.T.Fatal(err)
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("ID %q: %v", s, err)
	}
	return n
}

// rows splits piped table output into cells.
// rows splits piped table output into its cells, without the header line.
func rows(out string) [][]string {
	var rs [][]string
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) > 0 && strings.HasPrefix(lines[0], "TIME\t") {
		lines = lines[1:]
	}
	for _, line := range lines {
		if line != "" {
			rs = append(rs, strings.Split(line, "\t"))
		}
	}
	return rs
}

func TestList(t *testing.T) {
	h := clitest.StartParallel(t)
	ci := h.Env.Token(t, "ci", "admin")
	setLimit(h, h.Env.AdminToken, "mcpgw", 10)
	setLimit(h, h.Env.AdminToken, "mcpgw", 20)
	setLimit(h, ci, "other", 5)

	// Newest first: TIME ACTOR ACTION RESOURCE ID.
	rs := rows(h.Must("audit", "list"))
	if len(rs) != 3 {
		t.Fatalf("want 3 entries, got %q", rs)
	}
	want := [][]string{
		{"ci", "create", "definition/target:mcp_server:other:60"},
		{"test-admin", "update", "definition/target:mcp_server:mcpgw:60"},
		{"test-admin", "create", "definition/target:mcp_server:mcpgw:60"},
	}
	for i, r := range rs {
		if len(r) != 5 {
			t.Fatalf("row %q: want 5 columns", r)
		}
		if _, err := time.Parse(time.RFC3339, r[0]); err != nil {
			t.Errorf("TIME: %v", err)
		}
		if r[1] != want[i][0] || r[2] != want[i][1] || r[3] != want[i][2] {
			t.Errorf("row %d: got %q, want %q", i, r, want[i])
		}
	}
	if id0, id1 := mustInt(t, rs[0][4]), mustInt(t, rs[1][4]); id0 <= id1 {
		t.Errorf("not newest first: ids %s, %s", rs[0][4], rs[1][4])
	}

	tty := h.RunWith(clitest.Opts{TTY: true}, "audit", "list", "-o", "wide")
	lines := strings.Split(tty.Out, "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "TIME ACTOR ACTION RESOURCE ID REQUEST-ID CHANGES" {
		t.Errorf("wide header: %q", got)
	}
	if !strings.Contains(lines[2], "max_requests: 10 -> 20") {
		t.Errorf("wide CHANGES of the update: %q", lines[2])
	}

	var page struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.Unmarshal([]byte(h.Must("audit", "list", "-o", "json")), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != 3 || page.Entries[1]["action"] != "update" || page.Entries[1]["before"] == nil || page.Entries[1]["after"] == nil {
		t.Errorf("-o json: %v", page)
	}
	if got := h.Must("audit", "list", "-o", "yaml"); !strings.HasPrefix(got, "entries:\n") || !strings.Contains(got, "resource_type: definition") {
		t.Errorf("-o yaml: %q", got)
	}
	if got := h.Must("audit", "list", "-o", "name"); len(strings.Split(strings.TrimSpace(got), "\n")) != 3 || !strings.HasPrefix(got, "audit/") {
		t.Errorf("-o name: %q", got)
	}

	filters := []struct {
		args []string
		want int
	}{
		{[]string{"--actor", "ci"}, 1},
		{[]string{"--actor", "nobody"}, 0},
		{[]string{"--resource", "definition"}, 3},
		{[]string{"--resource", "definition/target:mcp_server:mcpgw:60"}, 2},
		{[]string{"--resource", "token"}, 0},
		{[]string{"--since", "1h"}, 3},
		{[]string{"--since", "2d"}, 3},
		{[]string{"--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, 0},
		{[]string{"--limit", "2"}, 2},
	}
	for _, f := range filters {
		if got := len(rows(h.Must(append([]string{"audit", "list"}, f.args...)...))); got != f.want {
			t.Errorf("audit list %q: %d entries, want %d", f.args, got, f.want)
		}
	}
	if r := h.RunWith(clitest.Opts{TTY: true}, "audit", "list", "--limit", "1"); !strings.Contains(r.ErrOut, "showing the 1 newest entries") {
		t.Errorf("no hint that more entries exist: %q", r.ErrOut)
	}
}

func TestExitCodes(t *testing.T) {
	h := clitest.StartParallel(t)
	viewer := h.Env.Token(t, "viewer", "viewer")
	enforcer := h.Env.Token(t, "gw", "enforcer")
	tests := []struct {
		name string
		tok  string
		args []string
		code int
		msg  string
	}{
		{"viewer may read", viewer, []string{"audit", "list"}, cmdutil.ExitOK, ""},
		{"enforcer may not", enforcer, []string{"audit", "list"}, cmdutil.ExitAuth, ""},
		{"bad token", "nonsense", []string{"audit", "list"}, cmdutil.ExitAuth, "Hint"},
		{"bad since", h.Env.AdminToken, []string{"audit", "list", "--since", "yesterday"}, cmdutil.ExitUsage, "--since"},
		{"negative since", h.Env.AdminToken, []string{"audit", "list", "--since", "-1h"}, cmdutil.ExitUsage, "--since"},
		{"limit 0", h.Env.AdminToken, []string{"audit", "list", "--limit", "0"}, cmdutil.ExitUsage, "--limit"},
		{"limit too big", h.Env.AdminToken, []string{"audit", "list", "--limit", "10001"}, cmdutil.ExitUsage, "--limit"},
		{"interval too short", h.Env.AdminToken, []string{"audit", "list", "-f", "--interval", "1ms"}, cmdutil.ExitUsage, "--interval"},
		{"no args", h.Env.AdminToken, []string{"audit", "list", "x"}, cmdutil.ExitUsage, ""},
		{"follow with a bad token", "nonsense", []string{"audit", "list", "--follow"}, cmdutil.ExitAuth, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.RunWith(clitest.Opts{Token: tt.tok}, tt.args...)
			if r.Code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.Code, tt.code, r.Out, r.ErrOut)
			}
			if !strings.Contains(r.ErrOut, tt.msg) {
				t.Errorf("stderr %q does not mention %q", r.ErrOut, tt.msg)
			}
		})
	}
}

// syncBuffer is written by the command's goroutine and read by the test.
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

// follow starts `audit list --follow` with args until the returned stop is
// called; stop returns the exit code.
func follow(h *clitest.Rlctl, tty bool, args ...string) (out *syncBuffer, stop func() int) {
	h.T.Helper()
	return followAs(h, []string{"audit", "list", "--follow"}, tty, args...)
}

// followAs is follow with another spelling of audit list --follow.
func followAs(h *clitest.Rlctl, spelling []string, tty bool, args ...string) (out *syncBuffer, stop func() int) {
	h.T.Helper()
	ios, _, _, _ := iostreams.Test()
	ios.SetStdoutTTY(tty)
	out = &syncBuffer{}
	ios.Out = out
	ios.ErrOut = &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	full := append(append([]string{"--server", h.Env.URL, "--token", h.Env.AdminToken}, spelling...), append([]string{"--interval", "100ms"}, args...)...)
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, full, ios, h.Getenv(nil)) }()
	return out, func() int {
		cancel()
		select {
		case code := <-done:
			return code
		case <-time.After(10 * time.Second):
			h.T.Fatal("audit list --follow did not stop when its context was cancelled")
			return -1
		}
	}
}

// waitFor polls out until cond holds.
func waitFor(t *testing.T, out *syncBuffer, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; output so far:\n%s", what, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFollowJSONLines(t *testing.T) {
	h := clitest.StartParallel(t)
	setLimit(h, h.Env.AdminToken, "first", 1)
	setLimit(h, h.Env.AdminToken, "second", 2)

	out, stop := follow(h, false, "-o", "json")
	waitFor(t, out, "the existing entries", func(s string) bool { return strings.Count(s, "\n") >= 2 })

	setLimit(h, h.Env.AdminToken, "third", 3)
	waitFor(t, out, "the new entry", func(s string) bool { return strings.Contains(s, "third") })
	if code := stop(); code != 0 {
		t.Errorf("exit %d after cancel, want 0", code)
	}

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got %d:\n%s", len(lines), out.String())
	}
	var ids []int64
	for i, name := range []string{"first", "second", "third"} {
		var e rl.AuditEntry
		if err := json.Unmarshal([]byte(lines[i]), &e); err != nil {
			t.Fatalf("line %d is not one JSON object: %v\n%s", i, err, lines[i])
		}
		if e.ResourceID != "target:mcp_server:"+name+":60" {
			t.Errorf("line %d: %s, want %s (oldest first)", i, e.ResourceID, name)
		}
		ids = append(ids, e.ID)
	}
	if ids[0] >= ids[1] || ids[1] >= ids[2] {
		t.Errorf("ids not ascending: %v", ids)
	}
}

// TestFollowSpellings: audit list --follow (-f), audit --follow and
// audit follow each print the existing entries, then a new one.
func TestFollowSpellings(t *testing.T) {
	h := clitest.StartParallel(t)
	setLimit(h, h.Env.AdminToken, "existing", 1)
	for i, spelling := range [][]string{{"audit", "list", "--follow"}, {"audit", "list", "-f"}, {"audit", "--follow"}, {"audit", "follow"}} {
		out, stop := followAs(h, spelling, false, "-o", "json")
		waitFor(t, out, "the existing entry", func(s string) bool { return strings.Contains(s, "existing") })
		name := fmt.Sprintf("new%d", i)
		setLimit(h, h.Env.AdminToken, name, 1)
		waitFor(t, out, "the new entry", func(s string) bool { return strings.Contains(s, name) })
		if code := stop(); code != 0 {
			t.Errorf("rlctl %s: exit %d after cancel, want 0", strings.Join(spelling, " "), code)
		}
	}
}

func TestFollowTable(t *testing.T) {
	h := clitest.StartParallel(t)
	// An empty log: follow from nothing.
	out, stop := follow(h, true, "--resource", "definition")
	waitFor(t, out, "the header", func(s string) bool { return strings.HasPrefix(s, "TIME") })

	h.Env.Token(t, "noise", "viewer")
	h.Must("token", "create", "--name", "ci", "--role", "viewer") // a token: filtered out
	setLimit(h, h.Env.AdminToken, "a", 1)
	waitFor(t, out, "a", func(s string) bool { return strings.Contains(s, "definition/target:mcp_server:a:60") })
	setLimit(h, h.Env.AdminToken, "b", 1)
	waitFor(t, out, "b", func(s string) bool { return strings.Contains(s, "definition/target:mcp_server:b:60") })
	if code := stop(); code != 0 {
		t.Errorf("exit %d after cancel, want 0", code)
	}
	got := out.String()
	if strings.Count(got, "TIME") != 1 || strings.Contains(got, "token/") {
		t.Errorf("want one header and no token entries:\n%s", got)
	}
	if strings.Index(got, ":a:60") > strings.Index(got, ":b:60") {
		t.Errorf("not oldest first:\n%s", got)
	}
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: "1h", want: now.Add(-time.Hour)},
		{in: "90m", want: now.Add(-90 * time.Minute)},
		{in: "7d", want: now.Add(-7 * 24 * time.Hour)},
		{in: "0s", want: now},
		{in: "2026-03-01T00:00:00Z", want: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{in: "2026-03-01T02:00:00+02:00", want: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
		{in: "-1h", bad: true},
		{in: "-2d", bad: true},
		{in: "d", bad: true},
		{in: "9999999999999d", bad: true},
		{in: "yesterday", bad: true},
		{in: "2026-03-01", bad: true},
	}
	for _, tt := range tests {
		got, err := audit.ParseSince(tt.in, now)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseSince(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"1h", "7d", "2026-03-01T00:00:00Z", "-1d", "9999999999999d"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := audit.ParseSince(s, now)
		if err == nil && got.After(now) && !strings.Contains(s, "T") {
			t.Errorf("ParseSince(%q) = %v: a duration back from now lies in the future", s, got)
		}
	})
}
