package enforce

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The seams of the enforcement core. pkg/enforce owns these interfaces and
// imports no backend: a counter store (pkg/enforce/postgres, and
// pkg/enforce/memory for one process) counts, a definitions source
// (pkg/enforce/postgres's LISTEN/NOTIFY source, pkg/enforce/filesource's
// YAML file) says what to count. Every counter store passes the exported
// conformance suite in pkg/enforce/enforcetest. docs/design.md has the
// picture and says where a new algorithm, store or protocol goes.

// Algorithm names how a gate counts. A new algorithm is a new value here
// plus one implementation in every counter store (and a case in the
// conformance suite), not a branch in every package.
type Algorithm string

const (
	// AlgorithmFixedWindow counts calls per window of Window length
	// aligned on the Unix epoch: window index floor(now / Window). It is
	// the default: a gate with an empty Algorithm is a fixed window.
	AlgorithmFixedWindow Algorithm = "fixed_window"
	// AlgorithmSlidingWindow is the weighted two-window counter: the
	// previous fixed window's count, weighted by the part of it still
	// inside the sliding window of length Window, plus the current one
	// (pkg/enforce/algorithm states its error bound).
	AlgorithmSlidingWindow Algorithm = "sliding_window"
	// AlgorithmTokenBucket is a token bucket of capacity Burst refilled at
	// Limit per Window, kept as a GCRA theoretical arrival time (one
	// timestamp per key). A new bucket starts full.
	AlgorithmTokenBucket Algorithm = "token_bucket"
)

// CounterGate is one counter a take checks, as a counter store sees it:
// everything it needs to count, nothing about definitions or callers.
type CounterGate struct {
	// Key names the counter (CounterKey.String()). Keys may hold any
	// bytes; a store that cannot keep some must encode them itself,
	// keeping distinct keys distinct.
	Key       string
	Algorithm Algorithm
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
	// Enforce is false for shadow gates: they count while they have room
	// and report when they would deny, never deny.
	Enforce bool
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
				AlgorithmFixedWindow, AlgorithmSlidingWindow, AlgorithmTokenBucket)
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
func (g CounterGate) KnownAlgorithm() Algorithm {
	switch g.Algorithm {
	case "", AlgorithmFixedWindow:
		return AlgorithmFixedWindow
	case AlgorithmSlidingWindow, AlgorithmTokenBucket:
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

// CounterStore counts. Take decides a batch of calls in one round trip
// where the store can: each call all or nothing, calls sharing a counter
// seeing each other's effect in order. deadline bounds the whole batch:
// a store gives up by then and reports ErrTimedOut, and a call it reports
// as failed must have consumed nothing (or the error must wrap
// ErrOutcomeUnknown).
type CounterStore interface {
	Take(ctx context.Context, reqs []TakeRequest, deadline time.Time) ([]TakeResult, error)
	// Sweep removes counters whose windows ended before now; stores whose
	// counters expire on their own return (0, nil).
	Sweep(ctx context.Context, now time.Time) (removed int64, err error)
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

// State is everything a definitions source knows: what the Enforcer
// builds its snapshot from.
type State struct {
	Definitions []ratelimit.Definition
	Memberships []ratelimit.Membership
	Admins      []ratelimit.Admin
	// EnforcementOff is the master switch: every call allowed, nothing
	// counted.
	EnforcementOff bool
}

// Tables a Change names.
const (
	TableDefinitions = "definitions"
	TableMemberships = "memberships"
	TableAdmins      = "admins"
	TableSettings    = "settings"
	// TableAuthLockouts: failed-credential lockouts were lifted in the
	// counter store. IDs are <scope>|<address key> (rlapi|203.0.113.7);
	// the Enforcer forgets what its AuthThrottle cached of them (nothing
	// is reloaded), All every address.
	TableAuthLockouts = "auth_lockouts"
)

// Change is one change notice: these rows of one table may have changed.
// All (or an empty Table) widens it to the whole table (or to
// everything).
type Change struct {
	Table string
	// IDs are definition ids, or <subject_type>:<subject> for memberships
	// and admins.
	IDs []string
	All bool
}

// Rows is what a source read for a set of changes: the rows that exist
// now among those asked for. An id asked for and absent here was deleted.
type Rows struct {
	Definitions []ratelimit.Definition
	Memberships []ratelimit.Membership
	Admins      []ratelimit.Admin
	// EnforcementOff is read with every load (one row).
	EnforcementOff bool
}

// Source says what to count. Load and LoadRows read consistently (one
// snapshot of the source). Watch delivers change notices until ctx ends
// or the stream breaks; notices sent while nobody watched are lost, so the
// Enforcer reloads everything whenever Watch (re)starts: ready is called
// once the stream is established.
type Source interface {
	Load(ctx context.Context) (State, error)
	LoadRows(ctx context.Context, definitions, memberships, admins []string) (Rows, error)
	Watch(ctx context.Context, ready func(), notify func(Change)) error
}
