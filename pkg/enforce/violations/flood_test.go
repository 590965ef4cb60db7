package violations_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestThrottleFloodThroughCheck is the flood test through the
// decision path: one caller throttled about 1,000,000 times by Check over
// ten minutes (the clock advancing 600 µs a call; counters in memory,
// definitions and rl_events in PostgreSQL; the record flushed every five
// seconds) writes 10 event rows (one per minute) whose counts add up to
// every throttle, 120 SIEM lines (one per flush) and at most 61
// aggregated "calls throttled" log lines (one per 10 s interval), whose
// counts add up to every throttle too. Under the race detector (ten times
// slower) it makes 100,000 calls over the same ten minutes: the bounds are
// the same. Not parallel: a million decisions would starve the parallel
// tests' deadlines.
func TestThrottleFloodThroughCheck(t *testing.T) {
	var slogBuf, siem lockedBuffer
	f := newFixtureWith(t, enforce.Options{Counters: memory.New(), BackendTimeout: 10 * time.Second, Logger: slog.New(slog.NewJSONHandler(&slogBuf, nil))},
		violations.Opts{Log: &siem, FlushInterval: time.Hour}, nil)
	f.Def(callerGroup("free", 60, ptr(5), nil))
	f.Member("user", "flood", "free")
	const (
		span  = 10 * time.Minute
		every = 5 * time.Second
	)
	n := 1_000_000
	if raceEnabled {
		n = 100_000
	}
	step := span / time.Duration(n)
	next := f.Clock.Now().Add(every)
	call := user("flood", "srv")
	var throttled int64
	for range n {
		d, err := f.E.Check(context.Background(), call)
		if err != nil {
			t.Fatal(err)
		}
		if d.Reason == enforce.ReasonThrottled {
			throttled++
		}
		f.Clock.Advance(step)
		if !f.Clock.Now().Before(next) {
			f.rec.Flush(context.Background())
			next = next.Add(every)
		}
	}
	f.E.Close() // writes the aggregated log lines
	f.rec.Flush(context.Background())
	if want := int64(n - 10*5); throttled != want {
		t.Fatalf("%d throttles, want %d (5 allowed a minute)", throttled, want)
	}
	rows := listEvents(t, f.Store, store.EventFilter{})
	var total int64
	for _, r := range rows {
		total += r.Count
		if r.Subject != "user:flood" || r.Kind != ratelimit.EventRateLimitExceeded {
			t.Errorf("row %+v, want user:flood's throttles", r)
		}
	}
	if len(rows) != 10 || total != throttled {
		t.Errorf("%d throttles wrote %d rows counting %d calls, want 10 rows counting all", throttled, len(rows), total)
	}
	if lines := siem.lines(t); len(lines) != 120 {
		t.Errorf("%d throttles wrote %d SIEM lines, want 120 (one per flush)", throttled, len(lines))
	}
	var lines, counted int64
	for _, m := range slogBuf.lines(t) {
		if m["msg"] == "calls throttled" {
			lines++
			c, _ := m["count"].(float64)
			counted += int64(c)
		}
	}
	if lines < 60 || lines > 61 || counted != throttled {
		t.Errorf("%d throttles wrote %d log lines counting %d, want 60 or 61 (one per 10 s) counting all", throttled, lines, counted)
	}
}
