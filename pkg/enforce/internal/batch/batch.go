// Package batch sends an Enforcer's decisions to its counter store: each
// round trip takes every decision already waiting (up to a bound), a lone
// decision runs its own, a batch the store refused whole is retried call
// by call, and decisions past what the store can answer in time are shed.
// pkg/enforce is its only user (its take through the counter store).
package batch

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/counterstore"
)

// maxBatch bounds how many decisions share one round trip.
const maxBatch = 32

// maxQueued bounds the decisions waiting for a round trip. A decision that
// finds the queue full is shed (counterstore.ErrOverloaded) at once rather than waiting
// for room: a burst beyond what the store can answer must not hold memory
// or goroutines without bound, nor be decided by the fail policy.
const maxQueued = 4096

// answerGrace is how long past its deadline a decision whose statement was
// sent waits for the store's own answer. The store is given the deadline
// (PostgreSQL's statement carries it as its statement_timeout, and aborts
// it, consuming nothing, at the deadline); the grace covers that abort's
// way back. Only a
// server or network that answers nothing within it leaves a decision whose
// counts may or may not have been taken (docs/design/counters.md, "Deadlines are the server's").
const answerGrace = 200 * time.Millisecond

// States of a takeRequest: a worker claims a queued request before sending
// it, a caller whose deadline passes first abandons it; whichever comes
// first wins, so a request is either sent and answered as it was decided, or
// never sent.
const (
	stateQueued int32 = iota
	stateClaimed
	stateAbandoned
)

// takeRequest is one decision waiting for its counter round trip.
type takeRequest struct {
	// deadline bounds the round trip (zero: none). It is set when the
	// request is claimed for its round trip, from the caller's own
	// deadline and the timeout, so that time spent queued behind other
	// decisions does not eat into the store's time.
	deadline    time.Time
	ctxDeadline time.Time // the caller's (zero: none)
	timeout     time.Duration
	req         counterstore.TakeRequest
	// peek, when set, is decided in the same round trip just before req:
	// the auth lockout of the call's address, which this replica did not
	// know (Enforcer.take).
	peek  *counterstore.TakeRequest
	reply chan Reply
	state atomic.Int32
}

// Reply is a decision's answer: Res for its request, Peek for the peek
// asked with it (when there was one), or Err.
type Reply struct {
	Res  counterstore.TakeResult
	Peek counterstore.TakeResult // when the request had a peek
	Err  error
}

// Batcher sends decisions to the counter store. Each worker holds no connection
// while idle; when it wakes for a decision it takes every other decision
// already waiting (up to maxBatch) into the same round trip. A lone
// decision waits for nobody, so latency at low load is one round trip,
// while under load the round trips, statements and commits per decision
// fall with the batch size.
//
// One call must never change another's decision: when a batch's round trip
// fails and the store changed nothing (counterstore.ErrNotApplied: it refused the
// batch, say over one call's input), its calls are retried one by one, each within its own
// deadline, so only a call that fails alone follows the fail policy.
//
// A decision that finds no round trip in flight runs its own, in its own
// goroutine (taking whatever has queued meanwhile along): at low load that
// saves handing it to a worker and the answer back, two goroutine wake-ups
// that were 6% of a lone decision's time on two cores (docs/performance-history.md,
// "A lone decision runs its own round trip").
type Batcher struct {
	store counterstore.CounterStore
	queue chan *takeRequest
	// inflight counts the round trips under way, the workers' and the
	// callers' own; closed (Enforcer.Close) ends the callers' own, which
	// Close then waits for (stop).
	inflight atomic.Int32
	closed   atomic.Bool
	// answered is when the store last answered a round trip (Unix
	// nanoseconds), whatever it said: a queue that does not move while the
	// store answers is overload (shed, counterstore.ErrOverloaded), one that does not
	// move while the store is silent is the store's failure (the fail
	// policy decides).
	answered atomic.Int64
	// shed is when a decision last found the queue full (Unix
	// nanoseconds): the replica is overloaded.
	shed atomic.Int64
}

// Stop makes every later call queue (to workers that are stopping) and
// waits for the callers' own round trips under way, each bounded by its
// deadline plus answerGrace.
func (b *Batcher) Stop() {
	b.closed.Store(true)
	for b.inflight.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
}

// New returns a Batcher over st; its workers run Work.
func New(st counterstore.CounterStore) *Batcher {
	return &Batcher{store: st, queue: make(chan *takeRequest, maxQueued)}
}

// Take queues a decision and waits for it, within ctx. A decision waits
// in the queue at most timeout (0: no bound but ctx's); its round trip then
// has timeout again, counted from when it is sent. A decision still queued
// when its wait ends is abandoned (it consumes nothing): shed as
// counterstore.ErrOverloaded when the store answered other round trips meanwhile,
// failed with context.DeadlineExceeded when it did not. One already sent is
// waited for, at most until its deadline plus answerGrace, so that its
// answer says what the store did.
//
// The timeout is a timer here rather than a context.WithTimeout around
// the call: a derived context costs a timer too, and a cancel context
// registered with the caller's, for every decision.
func (b *Batcher) Take(ctx context.Context, req counterstore.TakeRequest, timeout time.Duration) (counterstore.TakeResult, error) {
	rep := b.TakeWith(ctx, req, nil, timeout)
	return rep.Res, rep.Err
}

// TakeWith is Take, with peek (when not nil) decided in the same round
// trip just before req.
func (b *Batcher) TakeWith(ctx context.Context, req counterstore.TakeRequest, peek *counterstore.TakeRequest, timeout time.Duration) Reply {
	if err := ctx.Err(); err != nil {
		return Reply{Err: err}
	}
	r := &takeRequest{req: req, peek: peek, reply: make(chan Reply, 1), timeout: timeout}
	r.ctxDeadline, _ = ctx.Deadline()
	if !b.closed.Load() && b.inflight.CompareAndSwap(0, 1) {
		// Nothing in flight: this call's own round trip, alone (what
		// queued meanwhile is the idle workers'), bounded by its deadline
		// (round) as a worker's would be.
		defer b.inflight.Add(-1)
		if !b.closed.Load() { // Close may have begun since the first look
			b.send(context.Background(), []*takeRequest{r})
			return <-r.reply
		}
	}
	queued := time.Now()
	select {
	case b.queue <- r:
	default:
		// Full: overload while the store answers, else its failure.
		b.shed.Store(queued.UnixNano())
		if b.answeredWithin(queued, timeout) {
			return Reply{Err: counterstore.ErrOverloaded}
		}
		return Reply{Err: context.DeadlineExceeded}
	}
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	var err error
	select {
	case rep := <-r.reply:
		return rep
	case <-ctx.Done():
		err = ctx.Err()
		if errors.Is(err, context.DeadlineExceeded) {
			err = b.notSent(queued, err) // the caller's deadline came first
		}
	case <-expired:
		err = b.notSent(queued, context.DeadlineExceeded)
	}
	if r.state.CompareAndSwap(stateQueued, stateAbandoned) {
		return Reply{Err: err}
	}
	// Sent: the worker answers within the deadline plus the grace.
	return <-r.reply
}

// notSent is why a decision queued at queued was never sent, when its
// wait ended with Err: overload (counterstore.ErrOverloaded) when the store answered a
// round trip since then (it moves, but not fast enough for the queue); err,
// the store's failure for the fail policy, when it did not.
func (b *Batcher) notSent(queued time.Time, err error) error {
	if b.answered.Load() >= queued.UnixNano() {
		return counterstore.ErrOverloaded
	}
	return err
}

// answeredWithin reports whether the store answered a round trip within d
// before now (never, when d is 0: no bound, no judgement).
func (b *Batcher) answeredWithin(now time.Time, d time.Duration) bool {
	return d > 0 && now.Sub(time.Unix(0, b.answered.Load())) < d
}

// failed is the error to answer a sent decision whose round trip failed
// with err. A round trip that ran out of time while the replica is
// overloaded (decisions waiting for more than one round trip, or shed in
// the last second) and the store answered another within the last timeout
// is overload too: the store was slow because of the burst, and the
// decision is shed like those never sent instead of being left to the
// fail policy. That holds when the answer was lost past its grace as well
// (counterstore.ErrOutcomeUnknown): the call may then have been counted although it is
// refused, which under overload is the side to err on; a fail-open answer
// would admit it past its limit.
func (b *Batcher) failed(err error, timeout time.Duration) error {
	if !errors.Is(err, counterstore.ErrTimedOut) && !errors.Is(err, counterstore.ErrOutcomeUnknown) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	now := time.Now()
	backlogged := len(b.queue) >= maxBatch || now.Sub(time.Unix(0, b.shed.Load())) < time.Second
	if backlogged && b.answeredWithin(now, timeout) {
		return fmt.Errorf("%w: %w", counterstore.ErrOverloaded, err)
	}
	return err
}

// work serves the queue until ctx ends.
func (b *Batcher) Work(ctx context.Context) {
	batch := make([]*takeRequest, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return
		case r := <-b.queue:
			batch = append(batch, r)
		}
		b.inflight.Add(1)
		b.send(ctx, b.drain(batch))
		b.inflight.Add(-1)
	}
}

// drain adds what is queued to batch, up to maxBatch.
func (b *Batcher) drain(batch []*takeRequest) []*takeRequest {
	for len(batch) < maxBatch {
		select {
		case r := <-b.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

func (b *Batcher) send(ctx context.Context, batch []*takeRequest) {
	// A decision whose caller gave up is left out: it must not consume.
	live := batch[:0]
	now := time.Now()
	for _, r := range batch {
		if !r.state.CompareAndSwap(stateQueued, stateClaimed) {
			continue
		}
		r.deadline = r.ctxDeadline
		if r.timeout > 0 {
			if d := now.Add(r.timeout); r.deadline.IsZero() || d.Before(r.deadline) {
				r.deadline = d
			}
		}
		if !r.deadline.IsZero() && !now.Before(r.deadline) {
			r.reply <- Reply{Err: context.DeadlineExceeded}
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	for len(live) > 0 {
		reps, err := b.round(ctx, live)
		if err == nil {
			for i, r := range live {
				r.reply <- reps[i]
			}
			return
		}
		if len(live) == 1 || !changedNothing(err) {
			// Alone, or the outcome is unknown (the statement may have
			// committed): retrying could count a call twice.
			for _, r := range live {
				r.reply <- Reply{Err: b.failed(err, r.timeout)}
			}
			return
		}
		if !errors.Is(err, counterstore.ErrTimedOut) {
			// Refused, over some call's input: decide each call alone.
			b.apart(ctx, live, err)
			return
		}
		// Out of time at the earliest deadline, which is no call's
		// fault: the calls with time left go again, together. The call
		// with the earliest deadline is done whatever the clock says, so
		// every pass shrinks the batch.
		first := 0
		for i, r := range live {
			if !r.deadline.IsZero() && (live[first].deadline.IsZero() || r.deadline.Before(live[first].deadline)) {
				first = i
			}
		}
		still := live[:0]
		for i, r := range live {
			if i == first || (!r.deadline.IsZero() && !time.Now().Before(r.deadline)) {
				r.reply <- Reply{Err: b.failed(err, r.timeout)}
				continue
			}
			still = append(still, r)
		}
		live = still
	}
}

// apart decides each of reqs in its own round trip, within its own
// deadline, after their batch failed with err and changed nothing.
func (b *Batcher) apart(ctx context.Context, reqs []*takeRequest, err error) {
	for _, r := range reqs {
		if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
			r.reply <- Reply{Err: err}
			continue
		}
		reps, err := b.round(ctx, []*takeRequest{r})
		if err != nil {
			r.reply <- Reply{Err: b.failed(err, r.timeout)}
			continue
		}
		r.reply <- reps[0]
	}
}

// changedNothing reports whether a failed Take left every counter as it
// was, so its calls may be tried again: the store said so (counterstore.ErrNotApplied,
// or counterstore.ErrTimedOut, which takes nothing) and did not say the opposite
// (counterstore.ErrOutcomeUnknown). Any other error leaves the outcome unknown.
func changedNothing(err error) bool {
	return (errors.Is(err, counterstore.ErrNotApplied) || errors.Is(err, counterstore.ErrTimedOut)) && !errors.Is(err, counterstore.ErrOutcomeUnknown)
}

// round runs one Take for reqs. The statement is bounded on the
// server by the earliest deadline among them (every call is answered by its
// own deadline), and waited for until that deadline plus answerGrace.
func (b *Batcher) round(ctx context.Context, reqs []*takeRequest) ([]Reply, error) {
	var deadline time.Time
	for _, r := range reqs {
		if !r.deadline.IsZero() && (deadline.IsZero() || r.deadline.Before(deadline)) {
			deadline = r.deadline
		}
	}
	sendCtx, cancel := ctx, context.CancelFunc(func() {})
	if !deadline.IsZero() {
		sendCtx, cancel = context.WithDeadline(ctx, deadline.Add(answerGrace))
	}
	defer cancel()
	tr := make([]counterstore.TakeRequest, 0, len(reqs))
	for _, r := range reqs {
		if r.peek != nil {
			tr = append(tr, *r.peek)
		}
		tr = append(tr, r.req)
	}
	res, err := b.store.Take(sendCtx, tr, deadline)
	if err == nil {
		// Only an answer says the store is moving: a refused connection
		// or a lost answer is no evidence of it.
		b.answered.Store(time.Now().UnixNano())
	}
	if err != nil {
		return nil, err
	}
	if len(res) != len(tr) {
		return nil, fmt.Errorf("counter store answered %d of %d calls: %w", len(res), len(tr), counterstore.ErrOutcomeUnknown)
	}
	for i, r := range res {
		if n := len(tr[i].Gates); len(r.States) != n || len(r.Room) != n {
			return nil, fmt.Errorf("counter store answered %d states and %d rooms for %d gates: %w", len(r.States), len(r.Room), n, counterstore.ErrOutcomeUnknown)
		}
	}
	reps := make([]Reply, len(reqs))
	at := 0
	for i, r := range reqs {
		if r.peek != nil {
			reps[i].Peek = res[at]
			at++
		}
		reps[i].Res = res[at]
		at++
	}
	return reps, nil
}

// Queued is how many decisions wait for a worker.
func (b *Batcher) Queued() int { return len(b.queue) }
