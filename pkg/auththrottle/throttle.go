// Package auththrottle is the failed-credential throttle: it counts
// failed authentications per client address in any enforce.CounterStore
// and locks an address out, on every replica sharing the store. rlapi
// uses it for its own tokens and for the authentications gateways report
// (POST /api/auth-events); a gateway embedding pkg/enforce builds one and
// hands it to enforce.New as Options.Guard, so that a locked address is
// refused auth-locked before anything else of a decision.
package auththrottle

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Failed-credential throttling: gateways report
// authentication failures and successes per client address; MaxFailures
// failures within Window (a sliding window: the last Window seconds,
// whenever the first failure was) lock the address out for Lockout, and
// while it is locked the gateway refuses it (429, Retry-After) before it
// verifies any credential. IPv4 addresses are counted one by one, IPv6
// addresses by their /64 (pkg/clientip).
//
// Both the failure count and the lockout live in the counter store, so
// every replica sharing it shares them: the count is a sliding-window
// counter of limit MaxFailures, the lockout a token bucket of capacity one
// refilled once per Lockout, taken when the count is reached. A taken
// bucket is a lockout that every replica sees and that ends by itself,
// exactly Lockout later (its TAT), on every store, with no new table and
// no clock but the throttle's (docs/design/lockouts.md, "Failed-credential
// throttling").
//
// What a replica keeps in memory is a cache, bounded by MaxTracked
// entries: the lockouts it knows of (kept until they end, never evicted),
// and for quiet addresses when it last asked the store (an answer "not
// locked" is trusted for RecheckAfter) and last reset their count. When
// the cache is full the quiet entry touched least recently goes; when it
// holds nothing but active lockouts, a newcomer is not cached and is asked
// about every time. The store stays the truth either way, so no flood of
// fresh addresses can release a lockout.

// Outcome is what a gateway reports of one authentication.
type Outcome string

const (
	// Failure: a credential that is not valid (an unknown token, a
	// wrong password). It counts.
	Failure Outcome = "failure"
	// Success: a valid credential. It resets the address's count.
	Success Outcome = "success"
	// Expired: a credential that was valid and has expired (or was
	// revoked). It is no guess at a secret: it neither counts nor resets.
	Expired Outcome = "expired"
)

// Options tune a Throttle; zero values take the
// defaults (5 failures in 60 s lock an address for 300 s: few enough to stop
// guessing, many enough for a user's typos).
type Options struct {
	// Scope separates throttles sharing one counter store (rlapi's own
	// tokens count apart from the gateways' credentials); default
	// "gateway".
	Scope string
	// MaxFailures within Window lock an address out (default 5; negative
	// turns the throttle off: nothing counts, nothing is locked).
	MaxFailures int
	// Window is the sliding window failures are counted in (default 60 s,
	// whole seconds).
	Window time.Duration
	// Lockout is how long a locked address stays locked (default 300 s,
	// whole seconds).
	Lockout time.Duration
	// MaxTracked bounds the addresses cached in memory (default 100,000).
	MaxTracked int
	// RecheckAfter is how long an answer "not locked" from the store is
	// trusted before asking again (default 1 s; negative: always ask). A
	// lockout taken on another replica is refused here within it.
	RecheckAfter time.Duration
	// BackendTimeout bounds each counter round trip (default 250 ms).
	BackendTimeout time.Duration
	// IPv6Prefix is the prefix IPv6 addresses are counted by (default 64).
	IPv6Prefix int
	Now        func() time.Time
	// OnEvent, when set, is told of every lockout this throttle takes and
	// of every lockout it knew of that ended (EventLockoutStarted,
	// EventLockoutEnded). It runs on the reporting goroutine.
	OnEvent func(Event)
	// Record, when set, keeps every lockout this throttle takes in the
	// record of violations (give it violations.Recorder.RecordEvent): kind
	// auth_lockout_started, subject ip:<address or prefix>, limit the
	// failures that locked it. An ended lockout is not a violation and is
	// not recorded. The record's own vocabulary (ratelimit.Event) is the
	// whole contract, so neither package links the other.
	Record func(ratelimit.Event) error
	// Registerer receives rlctl_enforce_auth_lockouts_total, the lockouts
	// this throttle took, by scope (nil: not registered).
	Registerer prometheus.Registerer
}

// Kinds of Event.
const (
	// EventLockoutStarted: an address was locked out for its failed
	// authentications (by this replica: each lockout is reported once).
	EventLockoutStarted = "auth_lockout_started"
	// EventLockoutEnded: a lockout this replica knew of has ended (on
	// the first touch after its end; every replica that knew of it says
	// so).
	EventLockoutEnded = "auth_lockout_ended"
)

// Event is a lockout starting or ending.
type Event struct {
	Kind  string
	Scope string
	// Address is the locked key: the IPv4 address or the IPv6 prefix
	// (2001:db8:1:2::/64).
	Address string
	// ClientIP is the address whose failure locked it (started only).
	ClientIP string
	// Identity is what the failing call claimed to be, when the gateway
	// said (started only).
	Identity string
	// Failures is the count that locked it (started only).
	Failures int
	Window   time.Duration
	Lockout  time.Duration
	Until    time.Time
}

// Status is an address's state after a report or a check.
type Status struct {
	// Locked: the address is locked out; RetryAfter is how long for
	// (rounded up to whole seconds, at least one).
	Locked     bool
	RetryAfter time.Duration
	// Started: this report locked it.
	Started bool
}

// Throttle counts failed authentications and locks addresses out. It
// is safe for concurrent use. It is an enforce.Guard: an Enforcer built
// with it as Options.Guard refuses a locked address auth-locked before
// anything else (guard.go). rlapi builds one for its own tokens too.
type Throttle struct {
	counters enforce.CounterStore
	opts     Options
	now      func() time.Time

	mu      sync.Mutex
	entries map[string]*entry
	// quiet holds the entries that are not locked, least recently touched
	// first; locked entries are in entries only.
	quiet *list.List
	// locked counts the entries holding a lockout.
	locked int
	// scanned is when makeRoomLocked last looked for ended lockouts: a
	// cache full of lockouts is scanned at most once a second.
	scanned time.Time
	// gen counts Forget calls: an answer of the store asked for before a
	// lift and arriving after its notice is not cached (it may predate
	// the lift).
	gen uint64

	// lockouts counts the lockouts this throttle took
	// (rlctl_enforce_auth_lockouts_total).
	lockouts *prometheus.CounterVec
	// host is the Enforcer this throttle guards (Bind; nil: none).
	host atomic.Pointer[hostOf]
}

type entry struct {
	key string
	// until is the end of the lockout this replica knows of (zero: none).
	until time.Time
	// checked is when the store last said "not locked"; reset when the
	// count was last reset.
	checked, reset time.Time
	elem           *list.Element // in quiet; nil while locked
}

// New builds a throttle counting in counters.
func New(counters enforce.CounterStore, opts Options) (*Throttle, error) {
	if counters == nil {
		return nil, errors.New("auththrottle: New needs a counter store")
	}
	if opts.Scope == "" {
		opts.Scope = "gateway"
	}
	if opts.MaxFailures == 0 {
		opts.MaxFailures = 5
	}
	if opts.Window == 0 {
		opts.Window = time.Minute
	}
	if opts.Lockout == 0 {
		opts.Lockout = 5 * time.Minute
	}
	if err := CheckSettings(opts.MaxFailures, opts.Window, opts.Lockout); err != nil {
		return nil, err
	}
	// A successful authentication resets the address's failures: over a
	// store that cannot reset, every success would silently reset nothing.
	if opts.MaxFailures >= 0 && !counters.Capabilities().Reset {
		return nil, fmt.Errorf("auththrottle: the failed-credential throttle needs a counter store with the Reset capability (a success resets the failure count); %s does not declare it", backendName(counters))
	}
	if opts.MaxTracked <= 0 {
		opts.MaxTracked = 100_000
	}
	if opts.RecheckAfter == 0 {
		opts.RecheckAfter = time.Second
	}
	if opts.BackendTimeout <= 0 {
		opts.BackendTimeout = 250 * time.Millisecond
	}
	if !clientip.ValidIPv6Prefix(opts.IPv6Prefix) {
		opts.IPv6Prefix = clientip.DefaultIPv6Prefix
	}
	t := &Throttle{counters: counters, opts: opts, now: opts.Now, entries: map[string]*entry{}, quiet: list.New()}
	if t.now == nil {
		t.now = time.Now
	}
	t.lockouts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_auth_lockouts_total",
		Help: "Client addresses (IPv6: prefixes) this replica locked out for failed authentications, by scope."}, []string{"scope"})
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(t.lockouts); err != nil {
			return nil, fmt.Errorf("auththrottle: register metrics: %w", err)
		}
	}
	return t, nil
}

// backendName names counters in errors.
func backendName(counters enforce.CounterStore) string {
	if n := counters.BackendName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", counters)
}

// retryAfter rounds a wait up to whole seconds, at least one, as
// decisions' Retry-After is.
func retryAfter(wait time.Duration) time.Duration {
	secs := (wait + time.Second - 1) / time.Second
	return max(secs*time.Second, time.Second)
}

// CheckSettings checks a throttle's settings (after defaults): a
// positive count (or a negative one, off), and windows of whole seconds,
// at least one second and at most a day. Its errors name the setting.
func CheckSettings(maxFailures int, window, lockout time.Duration) error {
	if maxFailures < 0 {
		return nil
	}
	if maxFailures == 0 || maxFailures > 1_000_000 {
		return fmt.Errorf("max failures: must be between 1 and 1000000 (got %d; negative turns the throttle off)", maxFailures)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"window", window}, {"lockout", lockout}} {
		if d.v < time.Second || d.v > 24*time.Hour || d.v%time.Second != 0 {
			return fmt.Errorf("%s: must be whole seconds between 1s and 24h (got %s)", d.name, d.v)
		}
	}
	return nil
}

// Options are the throttle's settings, defaults filled in.
func (t *Throttle) Options() Options { return t.opts }

// Off reports whether the throttle is turned off (MaxFailures < 0).
func (t *Throttle) Off() bool { return t.opts.MaxFailures < 0 }

// Key is the key addr is counted by: the IPv4 address, the IPv6 prefix
// (empty for an address that is not valid).
func (t *Throttle) Key(addr netip.Addr) string {
	if !addr.IsValid() {
		return ""
	}
	return clientip.Key(addr.Unmap().WithZone(""), t.opts.IPv6Prefix)
}

// failureGate counts key's failures: limit MaxFailures per sliding
// Window. Keys: FailuresCounter and AuthLockoutCounter
// (docs/design/counters.md, "Counter keys"), kinds no definition's
// counter has.
func (t *Throttle) failureGate(key string) enforce.CounterGate {
	return enforce.CounterGate{Key: counterkey.AuthFailures(t.opts.Scope, int(t.opts.Window/time.Second), key).String(),
		Algorithm: enforce.AlgorithmSlidingWindow, Window: t.opts.Window, Limit: int64(t.opts.MaxFailures), Enforce: true}
}

// lockGate is key's lockout: a bucket of one token refilled once per
// Lockout.
func (t *Throttle) lockGate(key string) enforce.CounterGate {
	return enforce.CounterGate{Key: counterkey.AuthLockout(t.opts.Scope, key).String(),
		Algorithm: enforce.AlgorithmTokenBucket, Window: t.opts.Lockout, Limit: 1, Burst: 1, Enforce: true}
}

func (t *Throttle) take(ctx context.Context, g enforce.CounterGate, consume bool, now time.Time) (enforce.TakeResult, error) {
	deadline := time.Now().Add(t.opts.BackendTimeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	res, err := t.counters.Take(ctx, []enforce.TakeRequest{{Gates: []enforce.CounterGate{g}, Cost: 1, Consume: consume, Now: now}}, deadline)
	if err != nil {
		return enforce.TakeResult{}, err
	}
	if len(res) != 1 || len(res[0].Room) != 1 || len(res[0].States) != 1 {
		return enforce.TakeResult{}, fmt.Errorf("counter store answered %d results for one request", len(res))
	}
	return res[0], nil
}

// lockedStatus is the status of a lockout ending at until.
func lockedStatus(until, now time.Time) Status {
	return Status{Locked: true, RetryAfter: retryAfter(until.Sub(now))}
}

// Check reports whether addr is locked out: from the cache when it knows,
// else from the store. An invalid address is never locked. An error means
// the store could not say; the status is then "not locked" (a gateway
// that prefers to refuse can).
func (t *Throttle) Check(ctx context.Context, addr netip.Addr) (Status, error) {
	key := t.Key(addr)
	if key == "" || t.Off() {
		return Status{}, nil
	}
	now := t.now()
	if st, known := t.cached(key, now); known {
		return st, nil
	}
	return t.ask(ctx, key, now)
}

// cached answers from memory when it can: a known lockout still running,
// or "not locked" asked about within RecheckAfter.
func (t *Throttle) cached(key string, now time.Time) (Status, bool) {
	var ended *Event
	t.mu.Lock()
	e := t.entries[key]
	var st Status
	known := false
	switch {
	case e == nil:
	case !e.until.IsZero() && now.Before(e.until):
		st, known = lockedStatus(e.until, now), true
	case !e.until.IsZero():
		// Ended: say so, and ask the store (another replica may have
		// locked it again).
		ended = &Event{Kind: EventLockoutEnded, Scope: t.opts.Scope, Address: key, Until: e.until,
			Window: t.opts.Window, Lockout: t.opts.Lockout}
		t.unlockLocked(e)
	case t.opts.RecheckAfter > 0 && !e.checked.IsZero() && now.Sub(e.checked) < t.opts.RecheckAfter && !now.Before(e.checked):
		t.quiet.MoveToBack(e.elem)
		known = true
	}
	t.mu.Unlock()
	if ended != nil {
		t.emit(*ended)
	}
	return st, known
}

// ask peeks key's lockout in the store and caches the answer.
func (t *Throttle) ask(ctx context.Context, key string, now time.Time) (Status, error) {
	gen := t.generation()
	res, err := t.take(ctx, t.lockGate(key), false, now)
	if err != nil {
		return Status{}, fmt.Errorf("check auth lockout: %w", err)
	}
	return t.learn(key, res, now, gen), nil
}

// generation is the count of Forget calls so far.
func (t *Throttle) generation() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gen
}

// cachedCheck is Check from memory only: known is false when the store
// must be asked, with peekRequest(key), whose answer learn takes.
func (t *Throttle) cachedCheck(addr netip.Addr, now time.Time) (st Status, key string, known bool) {
	key = t.Key(addr)
	if key == "" || t.Off() {
		return Status{}, "", true
	}
	st, known = t.cached(key, now)
	return st, key, known
}

// peekRequest is the store's question ask asks about key, and the
// generation learn takes with its answer.
func (t *Throttle) peekRequest(key string, now time.Time) (enforce.TakeRequest, uint64) {
	return enforce.TakeRequest{Gates: []enforce.CounterGate{t.lockGate(key)}, Cost: 1, Now: now}, t.generation()
}

// learn caches the store's answer to peekRequest(key) (asked at
// generation gen) and says what it is.
func (t *Throttle) learn(key string, res enforce.TakeResult, now time.Time, gen uint64) Status {
	if !res.Room[0] && res.States[0].TAT.After(now) {
		t.remember(key, res.States[0].TAT, now, gen)
		return lockedStatus(res.States[0].TAT, now)
	}
	t.touch(key, now, func(e *entry) { e.checked = now })
	return Status{}
}

// Report records one authentication from addr (identity is what it
// claimed to be, for the event; it may be empty). A failure from an
// address already locked is not counted again. The status says whether
// addr is locked now.
func (t *Throttle) Report(ctx context.Context, addr netip.Addr, identity string, outcome Outcome) (Status, error) {
	key := t.Key(addr)
	if key == "" || t.Off() {
		return Status{}, nil
	}
	switch outcome {
	case Expired:
		return t.Check(ctx, addr)
	case Success:
		return t.succeeded(ctx, key)
	case Failure:
	default:
		return Status{}, fmt.Errorf("outcome %q: want failure, success or expired", outcome)
	}
	st, err := t.Check(ctx, addr)
	if err != nil || st.Locked {
		return st, err
	}
	now := t.now()
	gen := t.generation()
	fg := t.failureGate(key)
	res, err := t.take(ctx, fg, true, now)
	if err != nil {
		return Status{}, fmt.Errorf("count auth failure: %w", err)
	}
	s := res.States[0]
	remaining, _ := algorithm.Describe(algorithm.Gate{Algorithm: string(fg.Algorithm), Window: fg.Window, Limit: fg.Limit},
		algorithm.State{Count: s.Count, Previous: s.Previous}, now)
	if res.Room[0] && remaining > 0 {
		return Status{}, nil
	}
	// The count is reached: lock. A bucket already taken is a lockout
	// another replica took meanwhile.
	lr, err := t.take(ctx, t.lockGate(key), true, now)
	if err != nil {
		return Status{}, fmt.Errorf("take auth lockout: %w", err)
	}
	until := now.Add(t.opts.Lockout)
	started := lr.Room[0]
	if !started {
		until = lr.States[0].TAT
	}
	t.remember(key, until, now, gen)
	if started {
		// The failures that locked it are spent: after the lockout the
		// address starts afresh.
		_ = t.reset(ctx, fg, now)
		t.emit(Event{Kind: EventLockoutStarted, Scope: t.opts.Scope, Address: key, ClientIP: addr.Unmap().WithZone("").String(),
			Identity: identity, Failures: t.opts.MaxFailures, Window: t.opts.Window, Lockout: t.opts.Lockout, Until: until})
	}
	st = lockedStatus(until, now)
	st.Started = started
	return st, nil
}

// succeeded resets key's failures, at most once per RecheckAfter from
// this replica (a reset skipped counts failures longer: stricter, never
// looser), and reports whether it is locked (a lockout is not lifted by a
// success: while locked, no credential is verified).
func (t *Throttle) succeeded(ctx context.Context, key string) (Status, error) {
	now := t.now()
	if st, known := t.cached(key, now); known && st.Locked {
		return st, nil
	}
	due := true
	t.mu.Lock()
	if e := t.entries[key]; e != nil && e.until.IsZero() && t.opts.RecheckAfter > 0 && !e.reset.IsZero() &&
		now.Sub(e.reset) < t.opts.RecheckAfter && !now.Before(e.reset) {
		due = false
	}
	t.mu.Unlock()
	if !due {
		return Status{}, nil
	}
	if err := t.reset(ctx, t.failureGate(key), now); err != nil {
		return Status{}, err
	}
	t.touch(key, now, func(e *entry) { e.reset = now })
	return Status{}, nil
}

// reset forgets g's counter (an address's failures) as of now.
func (t *Throttle) reset(ctx context.Context, g enforce.CounterGate, now time.Time) error {
	deadline := time.Now().Add(t.opts.BackendTimeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := t.counters.Reset(ctx, []enforce.CounterGate{g}, now, deadline); err != nil {
		return fmt.Errorf("reset auth failures: %w", err)
	}
	return nil
}

// remember caches key's lockout until until, learned from the store at
// generation gen (a Forget since: not cached, the store answers). With
// the cache full of lockouts it is not cached either.
func (t *Throttle) remember(key string, until, now time.Time, gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return
	}
	e := t.entries[key]
	if e == nil {
		if !t.makeRoomLocked(now) {
			return
		}
		e = &entry{key: key}
		t.entries[key] = e
	} else if e.elem != nil {
		t.quiet.Remove(e.elem)
		e.elem = nil
	}
	if e.until.IsZero() {
		t.locked++
	}
	e.until = until
}

// touch updates key's quiet entry (creating it when there is room) with
// set, and marks it the most recently touched.
func (t *Throttle) touch(key string, now time.Time, set func(*entry)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[key]
	if e != nil && !e.until.IsZero() {
		return // a lockout learned meanwhile stands
	}
	if e == nil {
		if !t.makeRoomLocked(now) {
			return
		}
		e = &entry{key: key}
		e.elem = t.quiet.PushBack(e)
		t.entries[key] = e
	} else {
		t.quiet.MoveToBack(e.elem)
	}
	set(e)
}

// unlockLocked forgets an ended lockout's entry.
func (t *Throttle) unlockLocked(e *entry) {
	delete(t.entries, e.key)
	t.locked--
}

// makeRoomLocked frees one entry when the cache is full: the quiet entry
// touched least recently, else (every entry a lockout) the ended ones. It
// reports false when every entry is a running lockout.
func (t *Throttle) makeRoomLocked(now time.Time) bool {
	if len(t.entries) < t.opts.MaxTracked {
		return true
	}
	if f := t.quiet.Front(); f != nil {
		t.quiet.Remove(f)
		delete(t.entries, f.Value.(*entry).key)
		return true
	}
	// Only lockouts: drop those that ended (their end is logged at the
	// next touch by whoever still knows of it; here it is simply
	// forgotten), at most once a second so that a cache full of lockouts
	// costs a newcomer no scan.
	if !t.scanned.IsZero() && now.Sub(t.scanned) < time.Second && !now.Before(t.scanned) {
		return false
	}
	t.scanned = now
	freed := false
	for k, e := range t.entries {
		if !now.Before(e.until) {
			delete(t.entries, k)
			t.locked--
			freed = true
		}
	}
	return freed
}

// Forget drops what this replica cached about keys (addresses' keys, as
// Key gives them; none: every address), so that the next check asks the
// store. It is how a lockout lifted in the store (its counters deleted)
// stops being refused here at once, instead of when it would have ended:
// rlapi calls it on every replica when an administrator lifts a lockout
// (DELETE /api/auth-lockouts), and for every address when its change
// stream reconnects, since notices sent meanwhile are lost.
func (t *Throttle) Forget(keys ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gen++
	if len(keys) == 0 {
		t.entries, t.locked = map[string]*entry{}, 0
		t.quiet.Init()
		return
	}
	for _, k := range keys {
		e := t.entries[k]
		if e == nil {
			continue
		}
		if e.elem != nil {
			t.quiet.Remove(e.elem)
			delete(t.entries, k)
			continue
		}
		t.unlockLocked(e)
	}
}

// State is what the store holds of one address: its lockout and the
// failures its window counts now.
type State struct {
	Key        string
	Locked     bool
	RetryAfter time.Duration
	// Failures is the sliding window's count (its estimate, weighting the
	// previous window as the lockout decision does), at most MaxFailures.
	Failures int64
}

// Peek reads keys' lockouts and failure counts from the store, taking
// nothing, in one round trip, as a decision would find them: the same
// gates, the same algorithms. It caches nothing.
func (t *Throttle) Peek(ctx context.Context, keys []string) ([]State, error) {
	if len(keys) == 0 || t.Off() {
		return nil, nil
	}
	now := t.now()
	reqs := make([]enforce.TakeRequest, len(keys))
	for i, k := range keys {
		reqs[i] = enforce.TakeRequest{Gates: []enforce.CounterGate{t.lockGate(k), t.failureGate(k)}, Cost: 1, Now: now}
	}
	deadline := time.Now().Add(t.opts.BackendTimeout)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	res, err := t.counters.Take(ctx, reqs, deadline)
	if err != nil {
		return nil, fmt.Errorf("peek auth lockouts: %w", err)
	}
	if len(res) != len(keys) {
		return nil, fmt.Errorf("peek auth lockouts: counter store answered %d results for %d requests", len(res), len(keys))
	}
	out := make([]State, len(keys))
	for i, r := range res {
		if len(r.States) != 2 {
			return nil, fmt.Errorf("peek auth lockouts: counter store answered %d states for 2 gates", len(r.States))
		}
		out[i].Key = keys[i]
		if tat := r.States[0].TAT; tat.After(now) {
			out[i].Locked, out[i].RetryAfter = true, retryAfter(tat.Sub(now))
		}
		fg := t.failureGate(keys[i])
		s := r.States[1]
		remaining, _ := algorithm.Describe(algorithm.Gate{Algorithm: string(fg.Algorithm), Window: fg.Window, Limit: fg.Limit},
			algorithm.State{Count: s.Count, Previous: s.Previous}, now)
		out[i].Failures = fg.Limit - remaining
	}
	return out, nil
}

// Tracked is how many addresses the cache holds, and how many of them are
// lockouts.
func (t *Throttle) Tracked() (entries, lockouts int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries), t.locked
}

// logEvent is the WARN line of an Event.
func logEvent(log *slog.Logger, ev Event) {
	switch ev.Kind {
	case EventLockoutStarted:
		log.Warn("auth lockout", "event", ev.Kind, "scope", ev.Scope, "address", ev.Address, "client_ip", ev.ClientIP,
			"identity", ev.Identity, "failures", ev.Failures, "window", ev.Window.String(), "duration", ev.Lockout.String(),
			"until", ev.Until.UTC().Format(time.RFC3339))
	case EventLockoutEnded:
		log.Warn("auth lockout released", "event", ev.Kind, "scope", ev.Scope, "address", ev.Address,
			"ended", ev.Until.UTC().Format(time.RFC3339))
	}
}

// LogEvent writes ev as the WARN line rlapi writes of its own lockouts:
// "auth lockout" and "auth lockout released".
func LogEvent(log *slog.Logger, ev Event) { logEvent(log, ev) }
