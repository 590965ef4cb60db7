package enforce_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// TestThrottleFloodLogsInAggregate: 2,000 calls of one caller against a
// limit of 5 are 1,995 throttles, counted in metrics and written to the log
// as one line (the clock stands still: one interval) whose count says how
// many calls it stands for, not one line per call.
func TestThrottleFloodLogsInAggregate(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	f := newFixture(t, enforce.Options{Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	f.Def(target("mcp_server", "s", 60, 5))
	const n = 2000
	if allowed := f.Burst(user("alice", "s"), n); allowed != 5 {
		t.Fatalf("allowed %d of %d, want 5", allowed, n)
	}
	f.E.Close() // writes what is aggregated
	var throttleLines, throttled int64
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == "call throttled" || m["msg"] == "calls throttled" {
			throttleLines++
			c, _ := m["count"].(float64)
			throttled += int64(c)
		}
	}
	if throttleLines != 1 || throttled != n-5 {
		t.Errorf("%d throttled calls wrote %d throttle lines counting %d calls, want 1 line counting %d:\n%s",
			n-5, throttleLines, throttled, n-5, buf.String())
	}
}
