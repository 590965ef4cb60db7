package violations

import (
	"context"
	"strconv"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// BenchmarkRecordViolation is what a throttle adds to its decision: one
// event counted into the recorder's buffer (the flush is in the
// background). One key: a flood of one subject; many keys: 1,000
// subjects in turn.
func BenchmarkRecordViolation(b *testing.B) {
	for _, keys := range []int{1, 1000} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			r, err := New(nil, Opts{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			evs := make([]ratelimit.Event, keys)
			for i := range evs {
				evs[i] = ratelimit.Event{Kind: ratelimit.EventRateLimitExceeded, Subject: "user:u" + strconv.Itoa(i),
					DefinitionID: "caller:group:free:60", Tier: "free", Limit: 5}
			}
			i := 0
			for b.Loop() {
				r.record(evs[i%keys], "clr")
				i++
			}
			r.Flush(context.Background())
		})
	}
}
