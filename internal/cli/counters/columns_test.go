package counters

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
)

// The COUNT column from the API's typed fields: a window's count as it
// always was, a token bucket's tokens left of its burst.
func TestCountText(t *testing.T) {
	t.Parallel()
	seven := int64(7)
	full := time.Date(2026, 3, 14, 15, 4, 8, 0, time.UTC)
	for _, tt := range []struct {
		c    client.Counter
		want string
	}{
		{client.Counter{Key: "c|60|user:alice", Count: 17}, "17"},
		{client.Counter{Key: "c.sw|60|user:alice", Count: 4, Algorithm: "sliding_window"}, "4"},
		{client.Counter{Key: "t.tb|target:mcp_server:kb:60", Algorithm: "token_bucket", FullAt: &full, Tokens: &seven, Burst: 10}, "7/10 tokens"},
		{client.Counter{Key: "c.tb|60|user:alice", Algorithm: "token_bucket", FullAt: &full}, "bucket"},
	} {
		if got := countText(tt.c); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.c.Key, got, tt.want)
		}
	}
}
