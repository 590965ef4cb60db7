package api

import (
	"context"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A counter in its algorithm's terms (issue 11). A fixed or sliding
// window's counter is a count per window, shown as it always was. A token
// bucket's is one theoretical arrival time per key (GCRA,
// enforce.GateState.TAT): the API shows when the bucket is full again
// (full_at, its TAT) and, where the counter names the definition whose
// limit and burst it counts with, the whole tokens left.

// keyAlgorithm reads a counter key's algorithm from the marker pkg/enforce
// puts on its kind (c.tb, t.sw, ...; a fixed window's kind has none) and
// returns the key without it, in the fixed window's form that
// store.CounterKeyInfo reads. It is the one place here that knows the
// marker (a typed counter key can take it over).
func keyAlgorithm(key string) (algorithm, plain string) {
	kind, rest, ok := strings.Cut(key, "|")
	if !ok {
		return ratelimit.AlgorithmFixedWindow, key
	}
	switch {
	case strings.HasSuffix(kind, ".tb"):
		return ratelimit.AlgorithmTokenBucket, strings.TrimSuffix(kind, ".tb") + "|" + rest
	case strings.HasSuffix(kind, ".sw"):
		return ratelimit.AlgorithmSlidingWindow, strings.TrimSuffix(kind, ".sw") + "|" + rest
	}
	return ratelimit.AlgorithmFixedWindow, key
}

// rowState is a stored counter as enforce.GateState. A window's row holds
// its count; a token bucket's row (window index 0, migration 008) holds
// its TAT in nanoseconds since the epoch in the count column. The store
// does not hand the state over typed yet (a CounterRow.State would); until
// it does, this is the one place that knows that layout.
func rowState(row store.CounterRow, algorithm string) enforce.GateState {
	if algorithm == ratelimit.AlgorithmTokenBucket {
		if row.Count <= 0 {
			return enforce.GateState{}
		}
		return enforce.GateState{TAT: time.Unix(0, row.Count).UTC()}
	}
	return enforce.GateState{Count: row.Count}
}

// bucketState is what a token bucket's state means at now, for a bucket
// refilling limit tokens per window up to burst (0: limit): the whole
// tokens left and when it is full again (zero when it is full now). It is
// the arithmetic of reference 001 as pkg/enforce/algorithm computes it
// (GCRA: T = ceil(window / limit), tau = burst * T, tokens =
// floor((tau - (TAT - now)) / T)); once that package is merged its
// Describe gives the same numbers, and this should call it.
func bucketState(st enforce.GateState, window time.Duration, limit, burst int64, now time.Time) (tokens int64, fullAt time.Time) {
	if burst <= 0 {
		burst = limit
	}
	ahead := int64(0)
	if st.TAT.After(now) {
		ahead = st.TAT.Sub(now).Nanoseconds()
		fullAt = st.TAT.UTC()
	}
	if limit <= 0 || window <= 0 {
		return 0, fullAt
	}
	t := (window.Nanoseconds() + limit - 1) / limit
	const maxTau = int64(1) << 62
	tau := maxTau
	if burst <= maxTau/t {
		tau = burst * t
	}
	left := tau - ahead
	if left <= 0 {
		return 0, fullAt
	}
	return min(left/t, burst), fullAt
}

// describeCounter fills c's algorithm fields from its state. limit and
// burst are the bucket's when known (0: unknown, tokens left unsaid).
func describeCounter(c *counter, algorithm string, st enforce.GateState, limit, burst int64, now time.Time) {
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
func (s *Server) describeBuckets(ctx context.Context, rows []store.CounterRow, l *counterList, now time.Time) {
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
		_, plain := keyAlgorithm(rows[i].Key)
		if limit == 0 || !strings.HasPrefix(plain, "t|") {
			continue
		}
		describeCounter(c, ratelimit.AlgorithmTokenBucket, rowState(rows[i], ratelimit.AlgorithmTokenBucket), limit, burst, now)
	}
}
