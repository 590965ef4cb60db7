package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// record adds events to the record through the test rlapi's Enforcer, as
// its decisions would, and flushes them.
func record(h *clitest.Rlctl, evs ...rl.Event) {
	h.T.Helper()
	for _, ev := range evs {
		if err := h.Env.Violations.RecordEvent(ev); err != nil {
			h.T.Fatal(err)
		}
	}
	h.Env.Violations.Flush(context.Background())
}

func rows(out string) [][]string {
	var rs [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.HasPrefix(line, "MINUTE") {
			rs = append(rs, strings.Split(line, "\t"))
		}
	}
	return rs
}

func TestList(t *testing.T) {
	h := clitest.StartParallel(t)
	throttle := rl.Event{Kind: rl.EventRateLimitExceeded, Subject: "user:alice", DefinitionID: "caller:group:free:60", Tier: "free", Limit: 5, ClientIP: "203.0.113.7"}
	record(h, throttle, throttle, throttle)
	record(h, rl.Event{Kind: rl.EventQuarantineDenied, Subject: "user:mallory"})

	// Newest first: MINUTE KIND SEVERITY SUBJECT DEFINITION COUNT ID.
	rs := rows(h.Must("events", "list"))
	if len(rs) != 2 || len(rs[0]) != 7 {
		t.Fatalf("rows %q, want 2 of 7 columns", rs)
	}
	if got := strings.Join(rs[0][1:6], " "); got != "quarantine_denied high user:mallory - 1" {
		t.Errorf("newest row: %q", got)
	}
	if got := strings.Join(rs[1][1:6], " "); got != "rate_limit_exceeded warn user:alice caller:group:free:60 3" {
		t.Errorf("older row: %q", got)
	}
	if _, err := time.Parse(time.RFC3339, rs[0][0]); err != nil {
		t.Errorf("MINUTE: %v", err)
	}
	tty := h.RunWith(clitest.Opts{TTY: true}, "events", "list", "-o", "wide")
	lines := strings.Split(tty.Out, "\n")
	if got := strings.Join(strings.Fields(lines[0]), " "); got != "MINUTE KIND SEVERITY SUBJECT DEFINITION COUNT ID CALLER CLIENT-IP TARGET TEAM PATH TIER LIMIT LAST-SEEN" {
		t.Errorf("wide header: %q", got)
	}
	if !strings.Contains(lines[2], "203.0.113.7") || !strings.Contains(lines[2], "free") {
		t.Errorf("wide row lacks the context: %q", lines[2])
	}
	var page struct {
		Events []rl.Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(h.Must("events", "list", "-o", "json")), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Events) != 2 || page.Events[1].Count != 3 || page.Events[1].Limit != 5 {
		t.Errorf("-o json: %+v", page)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"--subject", "user:alice"}, 1},
		{[]string{"--kind", "quarantine_denied"}, 1},
		{[]string{"--severity", "warn"}, 1},
		{[]string{"--definition", "caller:group:free:60"}, 1},
		{[]string{"--since", "15m"}, 2},
		{[]string{"--until", "15m"}, 0},
		{[]string{"--limit", "1"}, 1},
	} {
		if got := len(rows(h.Must(append([]string{"events", "list"}, c.args...)...))); got != c.want {
			t.Errorf("events list %q: %d rows, want %d", c.args, got, c.want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	h := clitest.StartParallel(t)
	viewer := h.Env.Token(t, "viewer", "viewer")
	enforcer := h.Env.Token(t, "gw", "enforcer")
	for _, tt := range []struct {
		name string
		tok  string
		args []string
		code int
		msg  string
	}{
		{"viewer may read", viewer, []string{"events", "list"}, cmdutil.ExitOK, ""},
		{"enforcer may not", enforcer, []string{"events", "list"}, cmdutil.ExitAuth, ""},
		{"unknown kind", viewer, []string{"events", "list", "--kind", "made_up"}, cmdutil.ExitUsage, "--kind"},
		{"unknown severity", viewer, []string{"events", "follow", "--severity", "urgent"}, cmdutil.ExitUsage, "--severity"},
		{"bad since", viewer, []string{"events", "list", "--since", "yesterday"}, cmdutil.ExitUsage, "--since"},
		{"until before since", viewer, []string{"events", "list", "--since", "1h", "--until", "2h"}, cmdutil.ExitUsage, "--until"},
		{"limit 0", viewer, []string{"events", "list", "--limit", "0"}, cmdutil.ExitUsage, "--limit"},
		{"negative follow limit", viewer, []string{"events", "follow", "--limit", "-1"}, cmdutil.ExitUsage, "--limit"},
		{"interval too short", viewer, []string{"events", "follow", "--interval", "1ms"}, cmdutil.ExitUsage, "--interval"},
		{"follow with a bad token", "nonsense", []string{"events", "follow"}, cmdutil.ExitAuth, ""},
	} {
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

func waitFor(t *testing.T, out *syncBuffer, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // bounds a hang only
	for !cond(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; output so far:\n%s", what, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFollow: the existing rows oldest first, then new ones as JSON
// lines, filtered, until cancelled (exit 0); events follow and events
// list --follow alike.
func TestFollow(t *testing.T) {
	t.Parallel()
	for _, spelling := range [][]string{{"events", "follow"}, {"events", "list", "--follow"}} {
		t.Run(strings.Join(spelling, " "), func(t *testing.T) { testFollow(t, spelling) })
	}
}

func testFollow(t *testing.T, spelling []string) {
	h := clitest.StartParallel(t)
	record(h, rl.Event{Kind: rl.EventRateLimitExceeded, Subject: "user:first"})
	record(h, rl.Event{Kind: rl.EventRateLimitExceeded, Subject: "user:second"})

	ios, _, _, _ := iostreams.Test()
	out := &syncBuffer{}
	ios.Out, ios.ErrOut = out, &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	args := append(append([]string{"--server", h.Env.URL, "--token", h.Env.AdminToken}, spelling...), "--interval", "100ms",
		"--kind", "rate_limit_exceeded", "-o", "json")
	go func() { done <- cli.Run(ctx, args, ios, h.Getenv(nil)) }()
	waitFor(t, out, "the existing rows", func(s string) bool { return strings.Count(s, "\n") >= 2 })
	record(h, rl.Event{Kind: rl.EventQuarantineDenied, Subject: "user:filtered"})
	record(h, rl.Event{Kind: rl.EventRateLimitExceeded, Subject: "user:third"})
	waitFor(t, out, "the new row", func(s string) bool { return strings.Contains(s, "user:third") })
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after cancel, want 0", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("events follow did not stop when cancelled")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 JSON lines, got:\n%s", out.String())
	}
	for i, want := range []string{"user:first", "user:second", "user:third"} {
		var ev rl.Event
		if err := json.Unmarshal([]byte(lines[i]), &ev); err != nil || ev.Subject != want {
			t.Errorf("line %d: %s (%v), want %s", i, lines[i], err, want)
		}
	}
}
