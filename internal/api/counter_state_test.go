package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
)

// The counters API's rendering of a counter in its algorithm's terms,
// from a typed enforce.GateState (through the listener:
// TestCountersOfEveryAlgorithm).

// GCRA's arithmetic: 60 per minute (one token a second) in a
// bucket of 10.
func TestBucketState(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 4, 5, 0, time.UTC)
	for _, tt := range []struct {
		name   string
		tat    time.Time
		tokens int64
		full   time.Time
	}{
		{"new bucket: full", time.Time{}, 10, time.Time{}},
		{"TAT passed: full", now.Add(-time.Hour), 10, time.Time{}},
		{"3 tokens taken", now.Add(3 * time.Second), 7, now.Add(3 * time.Second)},
		{"whole tokens only", now.Add(2500 * time.Millisecond), 7, now.Add(2500 * time.Millisecond)},
		{"empty", now.Add(10 * time.Second), 0, now.Add(10 * time.Second)},
	} {
		tokens, full := bucketState(enforce.GateState{TAT: tt.tat}, time.Minute, 60, 10, now)
		if tokens != tt.tokens || !full.Equal(tt.full) {
			t.Errorf("%s: %d tokens, full at %v; want %d, %v", tt.name, tokens, full, tt.tokens, tt.full)
		}
	}
	// The burst defaults to the limit; T rounds up (7 per minute: T =
	// 8571428572 ns).
	if tokens, _ := bucketState(enforce.GateState{TAT: now.Add(8571428572)}, time.Minute, 7, 0, now); tokens != 6 {
		t.Errorf("7/min, one token taken: %d tokens left, want 6", tokens)
	}
}

// What the list shows of each kind of row.
func TestCounterOfAlgorithms(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 14, 15, 4, 5, 0, time.UTC)
	tat := now.Add(3 * time.Second)
	expires := now.Add(time.Minute)
	show := func(c client.Counter) string {
		b, _ := json.Marshal(c)
		return string(b)
	}
	fixed := counterOf(counteradmin.Counter{Key: "t|target:mcp_server:kb:60", WindowIndex: 29560000, State: enforce.GateState{Count: 4}, ExpiresAt: expires}, now)
	if got, want := show(fixed), `{"key":"t|target:mcp_server:kb:60","window_index":29560000,"window_seconds":60,"window_start":"2026-03-15T18:40:00Z","count":4,"expires_at":"2026-03-14T15:05:05Z","definition_id":"target:mcp_server:kb:60"}`; got != want {
		t.Errorf("fixed window:\n got %s\nwant %s", got, want)
	}
	sliding := counterOf(counteradmin.Counter{Key: "c.sw|60|user:alice", Algorithm: enforce.AlgorithmSlidingWindow, WindowIndex: 29560000, State: enforce.GateState{Count: 4}, ExpiresAt: expires}, now)
	if sliding.Algorithm != "sliding_window" || sliding.Count != 4 || sliding.WindowSeconds != 60 {
		t.Errorf("sliding window: %s", show(sliding))
	}
	row := counteradmin.Counter{Key: "t.tb|target:mcp_server:kb:60", Algorithm: enforce.AlgorithmTokenBucket, State: enforce.GateState{TAT: tat}, ExpiresAt: tat}
	bucket := counterOf(row, now)
	if got, want := show(bucket), `{"key":"t.tb|target:mcp_server:kb:60","window_index":0,"window_seconds":60,"count":0,"expires_at":"2026-03-14T15:04:08Z","definition_id":"target:mcp_server:kb:60","algorithm":"token_bucket","full_at":"2026-03-14T15:04:08Z"}`; got != want {
		t.Errorf("token bucket without its definition:\n got %s\nwant %s", got, want)
	}
	// With the definition's limit (60/min) and burst (10): tokens left.
	describeCounter(&bucket, "token_bucket", row.State, 60, 10, now)
	if bucket.Tokens == nil || *bucket.Tokens != 7 || bucket.Burst != 10 {
		t.Errorf("token bucket with its definition: %s", show(bucket))
	}
}
