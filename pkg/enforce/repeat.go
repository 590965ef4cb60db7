package enforce

import (
	"context"
	"time"
)

// A counter a call names more than once (one Envoy descriptor sent twice
// in a request, or two values of one share_threshold wildcard) takes the
// call's cost once per mention, as Envoy's service increments it once per
// descriptor. A counter store's take has one cost for all the gates of a
// call and counts a key once, so such a counter is taken as one gate whose
// room is checked for every mention at once: its limit (a token bucket's
// burst) lowered by what the other mentions take, so that the call passes
// only if all of them fit, all or nothing. When the call is allowed and
// consumes, what the other mentions take follows in a take of its own
// (with the gate's own limit: it fits, unless a concurrent call took the
// room in between, and then it is not counted rather than over-admitted).
// The decision's gates get their own limits back and one copy per mention.

// repeat is a counter a call names more than once.
type repeat struct {
	key          string
	limit, burst int64 // the gate's own
	extra        int64 // what the mentions after the first take
	descriptors  []int // the Descriptor of each mention after the first
}

// foldRepeats returns gates (sorted, so a key's mentions are adjacent)
// with each counter once, and the counters named more than once; nil when
// none is.
func foldRepeats(gates []Gate, cost int64) ([]Gate, []repeat) {
	dup := false
	for i := 1; i < len(gates) && !dup; i++ {
		dup = gates[i].Key() == gates[i-1].Key()
	}
	if !dup {
		return gates, nil
	}
	var reps []repeat
	out := make([]Gate, 0, len(gates))
	for i := 0; i < len(gates); {
		j := i + 1
		for j < len(gates) && gates[j].Key() == gates[i].Key() {
			j++
		}
		g := gates[i]
		if j-i > 1 {
			r := repeat{key: g.Key(), limit: g.Limit, burst: g.Burst, extra: int64(j-i-1) * cost}
			for _, o := range gates[i+1 : j] {
				r.descriptors = append(r.descriptors, o.Descriptor)
			}
			if g.Algorithm == AlgorithmTokenBucket {
				if g.Burst -= r.extra; g.Burst < 1 {
					g.Limit, g.Burst = 0, 0 // no room for them all, ever
				}
			} else {
				g.Limit = max(g.Limit-r.extra, 0)
			}
			reps = append(reps, r)
		}
		out = append(out, g)
		i = j
	}
	return out, reps
}

// unfold takes what the other mentions of reps cost (when the call was
// allowed and consumes) and gives d's gates their own limits back, with a
// copy per mention.
func (k *counting) unfold(ctx context.Context, d Decision, reps []repeat, consume bool, now time.Time) Decision {
	taken := consume && d.Allowed && d.Reason == ReasonAllowed
	if taken {
		for _, r := range reps {
			for _, g := range d.Gates {
				if g.Key() != r.key {
					continue
				}
				g.Limit, g.Burst = r.limit, r.burst
				req := TakeRequest{Cost: r.extra, Consume: true, Now: now, Gates: []CounterGate{counterGateOf(g)}}
				if res, err := k.roundTrip(ctx, req); err != nil || !res.Allowed {
					k.metrics.Errors.WithLabelValues("counters").Inc()
				}
				break
			}
		}
	}
	restore := func(gs []Gate) []Gate {
		n := len(gs)
		for i := range n {
			g := &gs[i]
			for _, r := range reps {
				if g.Key() != r.key {
					continue
				}
				if g.Limit == d.Limit && g.Remaining == d.Remaining && g.Reset.Equal(d.Reset) {
					d.Limit = r.limit // the headline is this gate's
				}
				g.Limit, g.Burst = r.limit, r.burst
				own(g, r, taken)
				for _, at := range r.descriptors {
					c := *g
					c.Descriptor = at
					gs = append(gs, c)
				}
			}
		}
		return gs
	}
	d.Denied, d.Shadow = restore(d.Denied), restore(d.Shadow)
	d.Gates = restore(d.Gates)
	return d
}

// own turns a folded gate's Count and Remaining, described with the
// lowered limit after the first mention's take, into the counter's own.
// Taken, the other mentions' take followed: what remained for all the
// mentions is what remains, and the count holds theirs too. Not taken
// (denied, or a peek), nothing of the others was counted: a window's or a
// bucket's remaining is its limit (burst) less its count, exact; a sliding
// window's is the lowered one plus what the others would have taken, but
// a lowered 0 stays 0 (the gate keeps no state to tell an exact 0 from a
// clamped one: at most what is really left).
func own(g *Gate, r repeat, taken bool) {
	switch {
	case taken:
		g.Count += r.extra
	case g.Algorithm == AlgorithmTokenBucket:
		g.Remaining = max(r.burst-g.Count, 0)
	case g.Algorithm == AlgorithmSlidingWindow:
		if g.Remaining > 0 {
			g.Remaining += r.extra
		}
	default:
		g.Remaining = max(r.limit-g.Count, 0)
	}
}
