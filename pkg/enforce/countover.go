package enforce

import (
	"context"
	"time"
)

// overLimit is the limit a gate is taken with when it must count whatever
// its room (countOver): out of reach of any count a window can hold, and
// exact in a double (Redis's Lua counts in doubles).
const overLimit = int64(1) << 52

// countOver counts the cost of a call whose descriptors count over their
// limits (DescriptorRequest.CountOver) on the fixed-window gates its take
// left untouched: every one when the call was denied (a denied take takes
// nothing anywhere), the full shadow ones when it was allowed. A counter
// store takes all or nothing and only within a limit, so this is a second
// take of those gates alone with their limit raised out of reach (the
// counter keys do not hold limits); res's states for them become what it
// counted, so that the decision built from res describes the counters as
// they are. The decision itself (res.Allowed, res.Room) is the first
// take's. Only such calls pay the second round trip; when it fails, the
// decision stands and the hits go uncounted (counted in the counters'
// errors metric).
func (k *counting) countOver(ctx context.Context, c Call, gates []Gate, res *TakeResult, cost int64, now time.Time) {
	if c.Descriptors == nil || !c.Descriptors.CountOver {
		return
	}
	var at []int
	req := TakeRequest{Cost: cost, Consume: true, Now: now}
	for i := range gates {
		cg := counterGateOf(gates[i])
		if cg.KnownAlgorithm() != AlgorithmFixedWindow || (res.Allowed && res.Room[i]) {
			continue
		}
		cg.Limit = overLimit
		at = append(at, i)
		req.Gates = append(req.Gates, cg) // a subset of sorted gates: sorted
	}
	if len(at) == 0 {
		return
	}
	over, err := k.roundTrip(ctx, req)
	if err != nil || !over.Allowed {
		k.metrics.Errors.WithLabelValues("counters").Inc()
		return
	}
	for j, i := range at {
		res.States[i] = over.States[j]
	}
}
