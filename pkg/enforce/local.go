package enforce

import (
	"context"
	"fmt"
	"time"
)

// The seam's hook for a counter store that decides some calls in memory
// (CounterCapabilities.Local: pkg/enforce/lease's layer, which holds
// blocks of hot keys' capacity). Such a store is asked for each call
// directly, through TakeLocal, rather than through the batcher: a call it
// decides from memory then costs no queue and no goroutine hand-off,
// which on two cores at 64 goroutines would cost more than the decision
// itself (docs/design/leases.md, "The seam"). What it cannot decide it
// sends back through roundTrip, batched with every other call.

// takeLocal is take over a store that declares Local.
func (e *Enforcer) takeLocal(ctx context.Context, c Call, gates []Gate, cost int64, consume bool, now time.Time) (Decision, error) {
	req := TakeRequest{Cost: cost, Consume: consume, Now: now, Gates: make([]CounterGate, len(gates))}
	for i, g := range gates {
		req.Gates[i] = g.counterGate()
	}
	res, err := e.counters.TakeLocal(ctx, req, e.roundTrip)
	if err == nil && (len(res.States) != len(gates) || len(res.Room) != len(gates)) {
		err = fmt.Errorf("counter store answered %d states and %d rooms for %d gates: %w", len(res.States), len(res.Room), len(gates), ErrOutcomeUnknown)
	}
	if err != nil {
		return e.backendFailed(c, gates, err)
	}
	if consume {
		e.countOver(ctx, c, gates, &res, cost, now)
	}
	return e.decision(c, gates, res, cost, consume, now), nil
}
