// Package counterstore is the counter-store seam of pkg/enforce: what a
// store that counts must do for an Enforcer (CounterStore), the requests
// it is given and the answers it gives, the errors it reports, and the
// seam of the degraded mode (Fallback). It sits below the core so that the
// core's own parts (the batcher, internal/batch) can use it without
// importing the core; pkg/enforce re-exports every name, and gateways and
// stores write enforce.CounterStore, enforce.TakeRequest and so on.
package counterstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
)

// ErrNotImplemented is wrapped by the error of a seam's method that its
// implementation declared it cannot do (a capability it does not declare).
var ErrNotImplemented = errors.New("enforce: not implemented")

// CounterGate is one counter a take checks, as a counter store sees it:
// everything it needs to count, nothing about definitions or callers.
type CounterGate struct {
	// Key names the counter (counterkey.Key.String()). Keys may hold any
	// bytes; a store that cannot keep some must encode them itself,
	// keeping distinct keys distinct.
	Key       string
	Algorithm algorithm.Name
	// Window is the window's length (whole seconds); for the token
	// bucket, the period its sustained rate is given per.
	Window time.Duration
	// Limit is how much the gate admits per window (the token bucket's
	// sustained rate: Limit per Window).
	Limit int64
	// Burst is the token bucket's capacity (>= 1; the gate builder fills
	// it, defaulting to Limit; a store reads 0 as Limit). The windows
	// ignore it.
	Burst int64
	// Parts are what the counters' selectors (CounterAdmin) pick the key
	// by: counterkey.PartsOf(Key), filled by the core once when it builds the gate
	// (whoever else builds a gate whose counter a selector should find
	// fills it the same way). A store that indexes counters by caller,
	// target and definition stores them beside the key instead of reading
	// them back out of it; the others ignore them.
	Parts counterkey.Parts
	// Enforce is false for shadow gates: they count while they have room
	// and report when they would deny, never deny.
	Enforce bool
	// Lease is the gate's definition's say in leases
	// (ratelimit.Definition.Lease; of a bucket several definitions share,
	// the greatest mode). It is a hint for a store layer that leases
	// blocks of hot keys (pkg/enforce/lease): counting stores ignore it,
	// and it never changes what a gate counts.
	Lease plan.LeaseMode
}

// TakeRequest is one call for a counter store to decide: all its gates at
// once, all or nothing.
type TakeRequest struct {
	// Gates are sorted by Key; a store locks (or orders) them so.
	Gates []CounterGate
	// Cost is what the call takes from every gate (>= 1).
	Cost int64
	// Consume is false for a peek: decide, take nothing.
	Consume bool
	// Now is the decision's time, by the Enforcer's clock (tests control
	// it). Windows are computed from it, never from the store's clock.
	Now time.Time
}

// Check reports what in r no counter store can count: a cost below 1, an
// algorithm no store knows, a window that is not a whole number of
// seconds, a negative limit or burst. Every store calls it before it
// counts, so they refuse the same requests in the same words.
func (r TakeRequest) Check() error {
	if r.Cost < 1 {
		return fmt.Errorf("cost %d: must be at least 1", r.Cost)
	}
	for _, g := range r.Gates {
		switch {
		case g.KnownAlgorithm() == "":
			return fmt.Errorf("gate %q: algorithm %q: this store counts %q, %q and %q", g.Key, g.Algorithm,
				algorithm.FixedWindow, algorithm.SlidingWindow, algorithm.TokenBucket)
		case g.Window < time.Second || g.Window%time.Second != 0:
			return fmt.Errorf("gate %q: window %v: must be a whole number of seconds", g.Key, g.Window)
		case g.Limit < 0:
			return fmt.Errorf("gate %q: limit %d: must not be negative", g.Key, g.Limit)
		case g.Burst < 0:
			return fmt.Errorf("gate %q: burst %d: must not be negative", g.Key, g.Burst)
		}
	}
	return nil
}

// KnownAlgorithm is g's algorithm (an empty one is the fixed window), ""
// for one no store counts.
func (g CounterGate) KnownAlgorithm() algorithm.Name {
	switch g.Algorithm {
	case "", algorithm.FixedWindow:
		return algorithm.FixedWindow
	case algorithm.SlidingWindow, algorithm.TokenBucket:
		return g.Algorithm
	}
	return ""
}

// TakeResult is what a counter store decided for one call.
type TakeResult struct {
	// Allowed: every enforce gate had room, and (when consuming) the cost
	// was taken from every gate with room. A denied call took nothing.
	Allowed bool
	// Room per gate: whether it had room for the call.
	Room []bool
	// States per gate: its counter after the decision.
	States []GateState
}

// GateState is a gate's counter after the decision, in its algorithm's
// terms.
type GateState struct {
	// Count is the current window's count (fixed_window, sliding_window).
	Count int64
	// Previous is the previous window's count (sliding_window: window
	// index - 1).
	Previous int64
	// TAT is the token bucket's theoretical arrival time after the
	// decision (GCRA); zero or not after now means the bucket is full.
	TAT time.Time
}

// CounterStore counts. Every method is mandatory; those a store may truly
// be unable to do, giving back (ReturnUnused), forgetting (Reset) and
// deciding in memory (TakeLocal), it declares in Capabilities, and when it
// declares one missing the method returns an error wrapping
// ErrNotImplemented. The core needs none of the three; the features built
// beside it that do refuse a store that lacks one, naming it
// (pkg/enforce/lease's layer needs GiveBack of the store it wraps;
// pkg/auththrottle and pkg/enforce/escalation need Reset). Every counting
// store in this module declares GiveBack and Reset; the lease layer
// declares Local.
type CounterStore interface {
	// Take decides a batch of calls in one round trip where the store
	// can: each call all or nothing, calls sharing a counter seeing each
	// other's effect in order. deadline bounds the whole batch: a store
	// gives up by then and reports ErrTimedOut, and a call it reports as
	// failed must have consumed nothing (or the error must wrap
	// ErrOutcomeUnknown).
	Take(ctx context.Context, reqs []TakeRequest, deadline time.Time) ([]TakeResult, error)
	// ReturnUnused takes back capacity a Take counted and a caller did not
	// use (a lease's unused block, pkg/enforce/lease; what a call found auth locked in its
	// own round trip took). A fixed or sliding window's count of Taken's
	// window goes down by Units (never below zero; a window gone is left
	// alone); a token bucket's TAT moves back by Units × its emission
	// interval, never before Now (never fuller than full). deadline bounds
	// it. Capability: GiveBack.
	ReturnUnused(ctx context.Context, rs []Return, deadline time.Time) error
	// Reset forgets the counters of the gates' keys as of now, so that
	// each key counts from zero: every algorithm, and every window that
	// counts at now (the current one, and the previous one a sliding
	// window weighs); other keys are untouched. A store that keeps
	// counters by key alone (memory, PostgreSQL) removes every counter of
	// the key; one that names them by window (Redis) finds them from the
	// gate's Window and now. deadline bounds it. Capability: Reset.
	Reset(ctx context.Context, gates []CounterGate, now, deadline time.Time) error
	// TakeLocal decides one call, in memory where it can: a store layer
	// that holds part of the counters in this process (pkg/enforce/lease's
	// blocks of hot keys) decides the gates it holds without I/O and sends
	// the rest, as one request, through next, which batches it with the
	// other decisions into a Take of this same store (the Enforcer's
	// batcher, within its BackendTimeout). The answer is as Take's: all
	// or nothing over req's gates, one state per gate; an error of next is
	// returned as it came, after what was decided locally is undone.
	// into has Room and States of len(req.Gates), zeroed, for the answer:
	// a store answers in them (or in an answer of its own, next's say).
	// It keeps no reference to into or req.Gates once it returns: the
	// Enforcer reuses them, so that a call decided in memory allocates
	// nothing for its request or its answer.
	// Capability: Local. The Enforcer calls it for every call instead of
	// queueing the call for Take, so that a call decided locally pays no
	// hop through the batcher.
	TakeLocal(ctx context.Context, req TakeRequest, into TakeResult, next TakeFunc) (TakeResult, error)
	// Sweep removes counters whose windows ended before now; stores whose
	// counters expire on their own return (0, nil).
	Sweep(ctx context.Context, now time.Time) (removed int64, err error)
	// BackendName names the backend for the metrics: the backend label of
	// rlctl_enforce_backend_duration_seconds (postgres, redis,
	// redis-cluster, memory). A store answering "" is labelled by its Go
	// type (*mypkg.Store): one value per process either way, so the label
	// stays bounded. It is a name, not a capability.
	BackendName() string
	// Capabilities declares what of the methods above the store can do.
	// It is constant for a store's life.
	Capabilities() CounterCapabilities
}

// CounterCapabilities are what a counter store declares it can do beside
// Take and Sweep, which every store can.
type CounterCapabilities struct {
	// GiveBack: ReturnUnused takes capacity back. The lease layer needs
	// it of the store it wraps (without it, what a replica leased and did
	// not use would stay counted). The
	// failed-credential throttle uses it to ask about an address in the
	// round trip of the call's own counters; without it the throttle asks
	// first, in a round trip of its own.
	GiveBack bool
	// Reset: Reset forgets counters. The failed-credential throttle needs
	// it (a successful authentication resets the address's failures) and
	// so does escalation (an ended lockout's violation count is cleared).
	Reset bool
	// Local: TakeLocal may decide some calls without I/O; the Enforcer
	// calls it directly for each call, and it batches what it cannot
	// decide through the function it is given. A decision may then make
	// no round trip, so the failed-credential throttle asks about an
	// address before the call rather than in its round trip. Counting
	// stores do not declare it: only a layer over one does
	// (pkg/enforce/lease).
	Local bool
}

// TakeFunc decides one call through the Enforcer's batcher
// (CounterStore.TakeLocal's next): queued with the other decisions for
// the store's next Take, bounded by the Enforcer's BackendTimeout and
// observed in its backend metrics.
type TakeFunc func(ctx context.Context, req TakeRequest) (TakeResult, error)

// Return is capacity a counter store gives back (ReturnUnused): Units of a
// block taken from Gate by a Take at Taken, unused at Now.
type Return struct {
	Gate CounterGate
	// Units is the unused part of the block (>= 1).
	Units int64
	// Taken is the block's TakeRequest.Now: for a window, the window it
	// was counted in.
	Taken time.Time
	// Now is when it is given back: a token bucket's TAT never moves back
	// before it.
	Now time.Time
}

// Errors a counter store's Take returns (wrapped), so the batcher knows
// what it may retry.
var (
	// ErrNotApplied: the store refused the batch and changed nothing (a
	// bad key, a constraint): each call may be retried on its own.
	ErrNotApplied = errors.New("enforce: counter store changed nothing")
	// ErrTimedOut: the deadline passed and nothing was taken.
	ErrTimedOut = errors.New("enforce: counter store timed out")
	// ErrOverloaded: the decision was shed, because more decisions were
	// waiting than the store could answer in time (the store itself
	// answers). One never sent, or whose round trip timed out, took
	// nothing; one whose answer was lost in the burst may have been
	// counted. The decision says ReasonOverloaded (or is refused, when a
	// used-up gate or a fail-closed policy refuses it), never fail-open.
	ErrOverloaded = errors.New("enforce: overloaded: too many decisions waiting for the counter store")
	// ErrOutcomeUnknown: the store may or may not have taken (a
	// connection lost after the request was sent). Never retried.
	ErrOutcomeUnknown = errors.New("enforce: counter store outcome unknown")
)

// Fallback decides, while the counter store cannot be reached, the gates
// whose fail policy is degrade (ratelimit.FailPolicyDegrade), on counters
// of this replica's own, and reports what it admitted to the store once it
// is back. pkg/enforce/degrade implements it; the core imports no
// implementation. Every method is safe for concurrent use.
//
// The core asks it in two places only: a call the fail policy decides
// (backendFailed) whose policy is degrade goes to Take instead of being
// allowed or refused; and while Pending, every call that is about to ask
// the counter store first waits for Report, so that what this replica
// admitted locally is counted before it decides on the shared counters
// again (docs/operations.md, "Degraded mode", states the bound).
type Fallback interface {
	// Take decides req (consuming or not, as req says) on local
	// counters whose limits are this replica's share of each gate's
	// (pkg/enforce/degrade: ceil(limit / live replicas)); it sets each
	// req.Gates[i]'s Limit and Burst to the share it decided on (the
	// decision describes the gates by it), and remembers what it
	// admitted, for Report. The answer is as a CounterStore's: all or
	// nothing, one Room and one State per gate.
	Take(req TakeRequest) TakeResult
	// Pending reports whether this replica decides locally and has not
	// yet reported to the counter store that it is back. It is read by
	// every decision: it must cost no more than an atomic load.
	Pending() bool
	// Report writes what was admitted locally to the counter store and,
	// when nothing is left to write and the store answered, ends the
	// degraded mode (Pending becomes false). An error means the store is
	// still unreachable (or refused the report): what was not written
	// stays pending, and the call is decided by the fail policy again.
	// It bounds its own round trips.
	Report(ctx context.Context) error
}
