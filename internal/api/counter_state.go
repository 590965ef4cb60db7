package api

import (
	"context"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// A counter in its algorithm's terms. A fixed or sliding
// window's counter is a count per window, shown as it always was. A token
// bucket's is one theoretical arrival time per key (GCRA,
// enforce.GateState.TAT): the API shows when the bucket is full again
// (full_at, its TAT) and, where the counter names the definition whose
// limit and burst it counts with, the whole tokens left.

// bucketState is what a token bucket's state means at now, for a bucket
// refilling limit tokens per window up to burst (0: limit): the whole
// tokens left and when it is full again (zero when it is full now), by
// pkg/enforce/algorithm's arithmetic.
func bucketState(st enforce.GateState, window time.Duration, limit, burst int64, now time.Time) (tokens int64, fullAt time.Time) {
	if burst <= 0 {
		burst = limit
	}
	if st.TAT.After(now) {
		fullAt = st.TAT.UTC()
	}
	if limit <= 0 || window <= 0 {
		return 0, fullAt
	}
	g := algorithm.Gate{Algorithm: string(algorithm.TokenBucket), Window: window, Limit: limit, Burst: burst}
	tokens, _ = algorithm.Describe(g, algorithm.State{TAT: st.TAT}, now)
	return tokens, fullAt
}

// describeCounter fills c's algorithm fields from its state. limit and
// burst are the bucket's when known (0: unknown, tokens left unsaid).
func describeCounter(c *wire.Counter, algorithm string, st enforce.GateState, limit, burst int64, now time.Time) {
	if algorithm == ratelimit.AlgorithmFixedWindow {
		return
	}
	c.Algorithm = algorithm
	if algorithm != ratelimit.AlgorithmTokenBucket {
		return
	}
	// A bucket is one row per key, not per window: its count and window
	// index say nothing.
	c.Count, c.WindowIndex, c.WindowStart = 0, 0, time.Time{}
	tokens, fullAt := bucketState(st, time.Duration(c.WindowSeconds)*time.Second, limit, burst, now)
	if !fullAt.IsZero() {
		c.FullAt = &fullAt
	}
	if limit > 0 {
		if burst <= 0 {
			burst = limit
		}
		c.Tokens, c.Burst = &tokens, burst
	}
}

// bucketOf is the limit and burst a definition-keyed token bucket counts
// with: a target definition's max_requests and burst. Caller buckets are
// shared by every definition of their window, and a caller definition's
// shadow counter by its user or agent limit: for those it says 0 (unknown).
func bucketOf(d ratelimit.Definition) (limit, burst int64) {
	if d.Axis != ratelimit.AxisTarget || d.MaxRequests == nil {
		return 0, 0
	}
	limit, burst = int64(*d.MaxRequests), int64(*d.MaxRequests)
	if d.Burst != nil {
		burst = int64(*d.Burst)
	}
	return limit, burst
}

// describeBuckets fills the tokens left of the token buckets in l whose
// key names a target definition, reading each definition once. A
// definition that cannot be read leaves its buckets' tokens unsaid: the
// list still answers.
func (s *Server) describeBuckets(ctx context.Context, counters []counteradmin.Counter, l *wire.CounterList, now time.Time) {
	defs := map[string]*ratelimit.Definition{}
	for i := range l.Counters {
		c := &l.Counters[i]
		if c.Algorithm != ratelimit.AlgorithmTokenBucket || c.DefinitionID == "" {
			continue
		}
		d, seen := defs[c.DefinitionID]
		if !seen {
			if got, err := s.store.GetDefinition(ctx, c.DefinitionID); err == nil {
				d = &got
			}
			defs[c.DefinitionID] = d
		}
		if d == nil {
			continue
		}
		limit, burst := bucketOf(*d)
		if k, err := counterkey.Parse(counters[i].Key); limit == 0 || err != nil || k.Kind != counterkey.KindTarget {
			continue
		}
		describeCounter(c, ratelimit.AlgorithmTokenBucket, counters[i].State, limit, burst, now)
	}
}
