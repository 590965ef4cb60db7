package enforce

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/internal/batch"
	"github.com/rlctl/rlctl/pkg/enforce/internal/metrics"
)

// counting is the take through the counter store: every round trip goes
// through the batcher (internal/batch) within the backend timeout and is
// observed; a store that decides some calls in memory is asked directly
// (local.go); the calls that count past their limits or repeat a counter
// take a second time (countover.go, repeat.go).
type counting struct {
	counters CounterStore
	batcher  *batch.Batcher
	metrics  *metrics.Metrics
	timeout  time.Duration
	// local: counters decide some calls in memory and take each call
	// directly (CounterCapabilities.Local; local.go); localNext is
	// roundTrip, bound once rather than per call.
	local     bool
	localNext TakeFunc
	// answers are the answers of calls taken through TakeLocal, reused
	// (local.go).
	answers sync.Pool
}

// roundTrip sends req to the counter store through the batcher within the
// backend timeout, and observes it.
func (k *counting) roundTrip(ctx context.Context, req TakeRequest) (TakeResult, error) {
	rep := k.roundTripWith(ctx, req, nil)
	return rep.Res, rep.Err
}

// roundTripWith is roundTrip with peek (when not nil) asked in the same
// round trip, just before req.
func (k *counting) roundTripWith(ctx context.Context, req TakeRequest, peek *TakeRequest) batch.Reply {
	start := time.Now()
	rep := k.batcher.TakeWith(ctx, req, peek, k.timeout)
	k.metrics.ObserveBackend(req.Consume, backendResult(rep.Err), time.Since(start))
	return rep
}

// takeLocal asks a store that declares Local to decide a call. A cached
// view's counter gates (hints) are shared by its calls: the store reads
// them and keeps no reference (CounterStore.TakeLocal), so a call decided
// in memory allocates nothing for its request. buf, when not nil, is the
// answer's room, for release once the decision is built from it.
func (k *counting) takeLocal(ctx context.Context, gates []Gate, hints *callView, cost int64, consume bool, now time.Time) (res TakeResult, buf *answer, err error) {
	req := TakeRequest{Cost: cost, Consume: consume, Now: now}
	if hints != nil && len(hints.counterGates) == len(gates) {
		req.Gates = hints.counterGates
	} else {
		req.Gates = make([]CounterGate, len(gates))
		for i, g := range gates {
			req.Gates[i] = counterGateOf(g)
		}
	}
	buf, into := answerBuf(&k.answers, len(gates))
	res, err = k.counters.TakeLocal(ctx, req, into, k.localNext)
	if err == nil && (len(res.States) != len(gates) || len(res.Room) != len(gates)) {
		err = fmt.Errorf("counter store answered %d states and %d rooms for %d gates: %w", len(res.States), len(res.Room), len(gates), ErrOutcomeUnknown)
	}
	return res, buf, err
}

// release puts an answer's room (takeLocal's buf; nil: none) back once
// the decision built from it is made.
func (k *counting) release(buf *answer) {
	if buf != nil {
		k.answers.Put(buf)
	}
}
