package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// logLines decodes JSON log lines and sums their counts.
func logLines(t *testing.T, buf *bytes.Buffer) (lines []map[string]any, total int64) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		n, ok := m["count"].(float64)
		if !ok {
			t.Fatalf("log line without a count: %s", sc.Text())
		}
		lines = append(lines, m)
		total += int64(n)
	}
	return lines, total
}

// TestFloodOfThrottlesWritesBoundedLines: 100,000 throttled calls by three
// callers over 100 s of (injected) time write at most one line per caller
// per 10 s interval, and the counts on the lines add up to every call.
func TestFloodOfThrottlesWritesBoundedLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	clk := &testClock{now: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), clk.Now, Opts{Interval: 10 * time.Second})
	const n = 100_000
	callers := []string{"alice", "bob", "mallory"}
	for i := range n {
		l.Record(Event{Reason: Throttled, Username: callers[i%len(callers)], TargetType: "mcp_server", Target: "s",
			Gate: "target:mcp_server:s:60", Limit: 5, RetryAfter: time.Second})
		clk.Advance(time.Millisecond)
	}
	l.Flush()
	lines, total := logLines(t, &buf)
	// 100 s of calls: ten intervals, plus the partial one Close flushes.
	if maxLines := len(callers) * 11; len(lines) > maxLines || len(lines) < len(callers) {
		t.Errorf("%d throttled calls wrote %d lines, want between %d and %d", n, len(lines), len(callers), maxLines)
	}
	if total != n {
		t.Errorf("the lines count %d calls, want %d", total, n)
	}
	for _, m := range lines {
		if m["msg"] != "calls throttled" || m["gate"] != "target:mcp_server:s:60" || m["level"] != "INFO" {
			t.Errorf("line %v", m)
			break
		}
	}
}

// TestFloodFromManySubjectsIsBounded: 200,000 quarantine denials from as
// many distinct callers within one interval write at most MaxKeys lines
// plus one that counts the rest; nothing is lost from the counts.
func TestFloodFromManySubjectsIsBounded(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	clk := &testClock{now: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), clk.Now, Opts{MaxKeys: 100})
	const n = 200_000
	for i := range n {
		l.Record(Event{Reason: Quarantined, Scope: "caller", ClientID: fmt.Sprintf("bot-%d", i), TargetType: "mcp_server", Target: "s"})
	}
	if buf.Len() != 0 {
		t.Fatalf("lines written before the interval ended:\n%s", buf.String())
	}
	l.Flush()
	lines, total := logLines(t, &buf)
	if len(lines) != 101 {
		t.Errorf("%d denials from %d subjects wrote %d lines, want 100 itemized and one for the rest", n, n, len(lines))
	}
	if total != n {
		t.Errorf("the lines count %d denials, want %d", total, n)
	}
	if last := lines[len(lines)-1]; last["reason"] != Quarantined || last["count"] != float64(n-100) {
		t.Errorf("the line for the rest: %v", last)
	}
	// The next interval starts empty: its keys are tracked afresh.
	buf.Reset()
	clk.Advance(10 * time.Second)
	l.Record(Event{Reason: Backend, FailClosed: true, Target: "s", Err: fmt.Errorf("boom")})
	if lines, total := logLines(t, &buf); len(lines) != 1 || total != 1 || lines[0]["msg"] != "counter store failed; applied the fail policy" {
		t.Errorf("after the interval: %v", lines)
	}
}
