// Package lease is a counter-store layer that decides hot keys' calls in
// memory (docs/design/leases.md). A Store wraps any enforce.CounterStore
// and is one itself, the way Envoy's ratelimit puts its local cache in
// front of its Redis cache; the enforcement core does not know it exists:
//
//	counters, err := lease.New(store, lease.Options{Time: time.Second, Replicas: 4})
//	e, err := enforce.New(ctx, enforce.Options{Counters: counters, OnClose: counters.Close, ...})
//
// For a gate it leases, the layer takes a block of the gate's capacity
// from the shared counter in one ordinary Take (cost = the block, that
// gate alone: the shared count includes it at once, so replicas together
// never admit past the limit), then decides later calls on that key in
// memory until the block or its lease time runs out, and gives back what
// it did not use (CounterStore.ReturnUnused: the inner store must declare
// GiveBack). Which gates are leased: hot keys (or every key, Options.All),
// unless the gate's definition says otherwise (CounterGate.Lease: never or
// always).
//
// The Store declares enforce.CounterCapabilities.Local: the Enforcer asks
// it for each call through TakeLocal, directly, and the Store sends what
// it cannot decide from its blocks through the function the Enforcer
// passes, batched with every other call. Take, ReturnUnused, Reset and
// Sweep pass through to the inner store.
//
// Lifetime: the Store's reaper runs from New until Close, and Close gives
// back every block. Close it once the Enforcer over it has stopped and
// before the inner store closes: Options.OnClose of the Enforcer is the
// place (the Enforcer runs it once its own work has stopped), chaining
// the inner store's close after it.
package lease

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// Options tune a Store; zero values take the defaults.
type Options struct {
	// Time is how long a block may be used (default 1 s). A fixed or
	// sliding window's block also ends with the window it was taken in.
	// What a replica holds unused is unavailable to the others for at most
	// this long.
	Time time.Duration
	// Replicas is how many enforcers share the counters (default 1). The
	// block is clamp(rate × Time, 1, capacity / (2 × Replicas)), capacity
	// being the limit (a token bucket's burst): all replicas' blocks
	// together never hold more than half of it.
	Replicas int
	// All leases every gate whose block is at least 1; otherwise only hot
	// keys are leased. A definition has the last word
	// (enforce.CounterGate.Lease): never is not leased even with All,
	// always is leased from the first call without it.
	All bool
	// HotRate: a key this process sees more than HotRate times within one
	// second is hot (default 100).
	HotRate int
	// TrackerSize is the number of slots of the fixed-size hot-key
	// tracker (default 4096). Keys sharing a slot add up: a cold key may be
	// taken for hot (it is then leased, which is safe), never the reverse.
	TrackerSize int
	// MaxLeases bounds the leases held at once (default 10,000); a key
	// past it is decided by the store.
	MaxLeases int
	// Timeout bounds each block's Take and each give-back (default 250
	// ms): the Enforcer's BackendTimeout is the usual value.
	Timeout time.Duration
	// Now is the layer's clock for retiring leases (default time.Now);
	// calls are decided at their TakeRequest.Now. Give it the Enforcer's.
	Now func() time.Time
	// Logger receives the give-backs that failed (default: none).
	Logger *slog.Logger
	// Registerer receives the layer's metrics (nil: not registered):
	// rlctl_enforce_leases, rlctl_enforce_lease_blocks_total,
	// rlctl_enforce_lease_returned_units_total and
	// rlctl_enforce_lease_local_decisions_total.
	Registerer prometheus.Registerer
}

// Store is a counter store that leases blocks of hot keys' capacity from
// the store it wraps (New). It is safe for concurrent use.
type Store struct {
	inner   enforce.CounterStore
	opts    Options
	timeout time.Duration
	now     func() time.Time
	log     *slog.Logger

	leases sync.Map // key string -> *lease
	n      atomic.Int64
	// recent is a direct-mapped cache in front of leases, by the key's
	// hash: per slot, the lease last found for a key hashing to it. A hot
	// key's calls find their lease there with one hash of the key and
	// one comparison, where sync.Map hashed the key through an interface
	// and walked its trie: about a twentieth of a decision made from
	// blocks (BenchmarkLeaseHotKey/leases). leases stays the truth: an
	// entry is used only while it is live and holds the very key.
	recent []atomic.Pointer[lease]

	seed maphash.Seed
	hot  []atomic.Uint64 // per slot: second<<24 | count (count saturates)

	// decided counts the calls decided wholly from blocks, flushed from
	// the leases' own counts (lease.decidedN).
	decided  atomic.Int64
	returned atomic.Int64
	refills  atomic.Int64

	cancel    context.CancelFunc
	reaper    sync.WaitGroup
	closed    atomic.Bool
	closeOnce sync.Once
}

// lease is one key's block. units is the part left; view says until when
// it may be used and what the shared counter held when it was taken.
type lease struct {
	gate  enforce.CounterGate // fixed for the lease's life; Lease zero
	block int64
	units atomic.Int64
	// decidedN counts the calls decided wholly from blocks, this lease
	// the first of their gates, not yet added to the Store's decided. It
	// sits beside units, whose cache line every local decision writes
	// anyway: two cores adding to one shared counter on each call cost an
	// eighth of a local decision. flushMetrics adds it, at every scrape
	// and every reap.
	decidedN atomic.Int64
	view     atomic.Pointer[leaseView]

	mu   sync.Mutex // held to refill or retire
	dead bool       // retired and out of the map (under mu)
	// retired is dead, readable without mu: a decision that took from a
	// retired lease flushes its own count (decide).
	retired atomic.Bool
	// refilling is closed when the refill in progress ends: the calls
	// that found the block short meanwhile wait for it all at once,
	// rather than queueing on mu and being handed it one by one.
	refilling atomic.Pointer[chan struct{}]
	// dryUntil (ns): a refill found no room for a call before then; calls
	// short of the block go to the store (batched, exact) rather than
	// queueing on mu for another refill that would find none either.
	dryUntil atomic.Int64
	// created (ns): a lease that never got a block is dropped one lease
	// time after it was made, not while its first refill is under way.
	created int64
}

type leaseView struct {
	until int64             // ns: the lease's end
	taken time.Time         // the block's TakeRequest.Now
	st    enforce.GateState // the counter after the block was taken
	block int64             // the units taken
}

// New wraps inner in a Store and starts its reaper (until Close). inner
// must declare GiveBack: what a block did not use is given back.
func New(inner enforce.CounterStore, opts Options) (*Store, error) {
	if inner == nil {
		return nil, errors.New("lease: the inner counter store is required")
	}
	if !inner.Capabilities().GiveBack {
		return nil, fmt.Errorf("lease: leases need a counter store with the GiveBack capability (what a lease did not use is given back); %s does not declare it",
			backendName(inner))
	}
	if opts.Time <= 0 {
		opts.Time = time.Second
	}
	if opts.Replicas < 1 {
		opts.Replicas = 1
	}
	if opts.HotRate <= 0 {
		opts.HotRate = 100
	}
	if opts.TrackerSize <= 0 {
		opts.TrackerSize = 4096
	}
	if opts.MaxLeases <= 0 {
		opts.MaxLeases = 10_000
	}
	s := &Store{inner: inner, opts: opts, timeout: opts.Timeout, now: opts.Now, log: opts.Logger,
		seed: maphash.MakeSeed(), hot: make([]atomic.Uint64, opts.TrackerSize), recent: make([]atomic.Pointer[lease], recentSlots)}
	if s.timeout <= 0 {
		s.timeout = 250 * time.Millisecond
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(newCollector(s)); err != nil {
			return nil, fmt.Errorf("lease: register the metrics: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	every := min(max(opts.Time/4, 10*time.Millisecond), 100*time.Millisecond)
	s.reaper.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.reap(s.now())
			}
		}
	})
	return s, nil
}

// backendName is the backend label of a store: its BackendName, or its
// Go type when it names none (as the Enforcer labels it).
func backendName(s enforce.CounterStore) string {
	if n := s.BackendName(); n != "" {
		return n
	}
	return fmt.Sprintf("%T", s)
}

// Close stops the reaper and gives back every block. Call it once the
// Enforcer over the Store has closed (Options.OnClose) and before the
// inner store closes; later calls pass through to the inner store.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel()
		s.reaper.Wait()
		s.leases.Range(func(_, v any) bool {
			s.retire(v.(*lease))
			return true
		})
	})
}

// Take passes through to the inner store: leases apply to the calls the
// Enforcer sends through TakeLocal (the Enforcer's batcher sends their
// misses here).
func (s *Store) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	return s.inner.Take(ctx, reqs, deadline)
}

// ReturnUnused passes through to the inner store.
func (s *Store) ReturnUnused(ctx context.Context, rs []enforce.Return, deadline time.Time) error {
	return s.inner.ReturnUnused(ctx, rs, deadline)
}

// Reset passes through to the inner store.
func (s *Store) Reset(ctx context.Context, gates []enforce.CounterGate, now, deadline time.Time) error {
	return s.inner.Reset(ctx, gates, now, deadline)
}

// Sweep passes through to the inner store.
func (s *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	return s.inner.Sweep(ctx, now)
}

// BackendName is the inner store's (its Go type when it names none), so
// the Enforcer's metrics keep their backend label.
func (s *Store) BackendName() string { return backendName(s.inner) }

// Capabilities are the inner store's, and Local: TakeLocal decides calls
// on leased keys from memory.
func (s *Store) Capabilities() enforce.CounterCapabilities {
	c := s.inner.Capabilities()
	c.Local = true
	return c
}

// Stats is what a Store's leases did (Store.Stats).
type Stats struct {
	// Leases held now.
	Leases int64
	// Refills is how many blocks were taken from the store.
	Refills int64
	// Returned is how many unused units were given back.
	Returned int64
}

// Stats reports the Store's leases.
func (s *Store) Stats() Stats {
	return Stats{Leases: s.n.Load(), Refills: s.refills.Load(), Returned: s.returned.Load()}
}

// BlockSize is the block a Store leases of g: clamp(rate × leaseTime,
// 1, capacity / (2 × replicas)), rate = Limit / Window, capacity = Limit
// (a token bucket's Burst). 0 when the capacity is below 2 × replicas: a
// gate that small is decided by the store.
func BlockSize(g enforce.CounterGate, leaseTime time.Duration, replicas int) int64 {
	capacity := g.Limit
	if g.KnownAlgorithm() == enforce.AlgorithmTokenBucket && g.Burst > 0 {
		capacity = g.Burst
	}
	if replicas < 1 {
		replicas = 1
	}
	most := capacity / (2 * int64(replicas))
	if most < 1 || g.Window <= 0 {
		return 0
	}
	b := float64(g.Limit) * leaseTime.Seconds() / g.Window.Seconds()
	switch {
	case b < 1:
		return 1
	case b > float64(most):
		return most
	}
	return int64(b)
}

// recentSlots is the size of Store.recent: a power of two, a few times
// the keys hot at once on one replica.
const recentSlots = 4096

// seen counts one call on the key of hash h in the hot-key tracker and
// says whether the key is hot.
func (s *Store) seen(h uint64, now time.Time) bool {
	if s.opts.All {
		return true
	}
	slot := &s.hot[h%uint64(len(s.hot))]
	sec := uint64(now.Unix()) & (1<<40 - 1)
	for {
		v := slot.Load()
		var next uint64
		switch {
		case v>>24 != sec:
			next = sec<<24 | 1
		case v&(1<<24-1) == 1<<24-1:
			return true // saturated
		default:
			next = v + 1
		}
		if slot.CompareAndSwap(v, next) {
			return int(next&(1<<24-1)) > s.opts.HotRate
		}
	}
}

// get is the lease of cg's key for a call of cost, creating an empty one
// for a hot key (any key with All, or a gate whose definition says lease
// always); nil when the gate is not leased (its definition says never, its
// block would be 0, or the key is not hot).
func (s *Store) get(cg enforce.CounterGate, cost int64, now time.Time) *lease {
	mode := cg.Lease
	cg.Lease = 0 // a hint, not part of the counter: a lease's gate leaves it out
	h := maphash.String(s.seed, cg.Key)
	if ls := s.lookup(cg.Key, h); ls != nil {
		if sameCounter(ls.gate, cg) && mode != enforce.LeaseNever {
			if cost > ls.block {
				return nil
			}
			return ls
		}
		// The definition changed (a new limit, or lease never, say): the
		// old block is given back, the key starts again.
		s.retire(ls)
	}
	switch mode {
	case enforce.LeaseNever:
		return nil
	case enforce.LeaseAuto:
		if !s.seen(h, now) {
			return nil
		}
	}
	block := BlockSize(cg, s.opts.Time, s.opts.Replicas)
	if block < 1 || cost > block {
		return nil
	}
	if s.n.Load() >= int64(s.opts.MaxLeases) {
		return nil
	}
	ls := &lease{gate: cg, block: block, created: now.UnixNano()}
	if v, loaded := s.leases.LoadOrStore(cg.Key, ls); loaded {
		ls = v.(*lease)
		if !sameCounter(ls.gate, cg) || cost > ls.block {
			return nil
		}
		return ls
	}
	s.n.Add(1)
	return ls
}

// lookup is the lease of key, of hash h, if there is one: from recent
// when its slot holds it, else from leases (then kept in the slot). A
// retired lease in the slot is passed over: it has left leases, which
// may hold a new lease of the key since.
func (s *Store) lookup(key string, h uint64) *lease {
	slot := &s.recent[h&(recentSlots-1)]
	if ls := slot.Load(); ls != nil && ls.gate.Key == key && !ls.retired.Load() {
		return ls
	}
	v, ok := s.leases.Load(key)
	if !ok {
		return nil
	}
	ls := v.(*lease)
	if slot.Load() != ls {
		slot.Store(ls)
	}
	return ls
}

// sameCounter says whether a, the gate a lease was taken for, still
// counts as b does, b having the same key (the leases are found by key):
// the rest of the gate is compared, not the key again, which on a hot
// key's every call was a string comparison per gate for nothing.
func sameCounter(a, b enforce.CounterGate) bool {
	return a.Window == b.Window && a.Limit == b.Limit && a.Burst == b.Burst && a.Enforce == b.Enforce &&
		a.Lease == b.Lease && a.Algorithm == b.Algorithm
}

// tryTake takes cost from the block if it is live at now and holds it.
func (ls *lease) tryTake(cost int64, now time.Time) bool {
	v := ls.view.Load()
	if v == nil || now.UnixNano() >= v.until {
		return false
	}
	for {
		u := ls.units.Load()
		if u < cost {
			return false
		}
		if ls.units.CompareAndSwap(u, u-cost) {
			return true
		}
	}
}

// putBack gives cost back to the block (a call decided locally on this
// gate was then denied by another).
func (ls *lease) putBack(cost int64) { ls.units.Add(cost) }

// refill takes cost from each of need, leases whose blocks are used up
// or over, for one call; got[k] says whether need[k] could be decided
// locally (false: the store decides that gate with the call's others). A
// lease another call is refilling is waited for (all its waiters wake
// at once) and tried again. The leases this call refills are refilled
// together: what is left of their old blocks goes back in one
// ReturnUnused, the new blocks come in one Take (one call per gate), so
// a call of three expired gates waits two round trips, not six. When the
// shared counter cannot give a whole block, a second Take asks for what
// its answer says is left, if the call fits in it.
func (s *Store) refill(ctx context.Context, need []*lease, got []bool, cost int64, now time.Time) error {
	var ownBuf, waitBuf [maxLeasedGates]int
	own, wait := ownBuf[:0], waitBuf[:0]
	var chans [maxLeasedGates]chan struct{}
	for k, ls := range need {
		if !ls.mu.TryLock() {
			wait = append(wait, k)
			continue
		}
		if ls.dead || ls.tryTake(cost, now) {
			got[k] = !ls.dead
			ls.mu.Unlock()
			continue
		}
		chans[k] = make(chan struct{})
		ls.refilling.Store(&chans[k])
		own = append(own, k)
	}
	var err error
	if len(own) > 0 {
		err = s.refillOwned(ctx, need, own, got, cost, now)
	}
	// Released before waiting on anyone else's refill: a call holding one
	// lease while waiting for another's could wait for a call doing the
	// same the other way round.
	for _, k := range own {
		need[k].refilling.Store(nil)
		need[k].mu.Unlock()
		close(chans[k])
	}
	for _, k := range wait {
		if w := need[k].refilling.Load(); w != nil {
			select {
			case <-*w:
			case <-ctx.Done():
				continue
			}
		}
		// Refilled meanwhile, or being retired (then the store decides).
		got[k] = need[k].tryTake(cost, now)
	}
	return err
}

// refillOwned refills need[k] for k in own (their locks held).
func (s *Store) refillOwned(ctx context.Context, need []*lease, own []int, got []bool, cost int64, now time.Time) error {
	var rsBuf [maxLeasedGates]enforce.Return
	rs := rsBuf[:0]
	for _, k := range own {
		if r, ok := s.unused(need[k], now); ok {
			rs = append(rs, r)
		}
	}
	s.giveBack(ctx, rs)
	var wantBuf [maxLeasedGates]int64
	want := wantBuf[:len(need)]
	todo := append([]int(nil), own...)
	for _, k := range own {
		want[k] = need[k].block
	}
	for try := 0; try < 2 && len(todo) > 0; try++ {
		reqs := make([]enforce.TakeRequest, len(todo))
		for j, k := range todo {
			reqs[j] = enforce.TakeRequest{Gates: []enforce.CounterGate{need[k].gate}, Cost: want[k], Consume: true, Now: now}
		}
		deadline := time.Now().Add(s.timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		tctx, cancel := context.WithDeadline(ctx, deadline.Add(answerGrace))
		res, err := s.inner.Take(tctx, reqs, deadline)
		cancel()
		if err == nil && len(res) != len(reqs) {
			err = fmt.Errorf("counter store answered %d of %d calls: %w", len(res), len(reqs), enforce.ErrOutcomeUnknown)
		}
		for j := 0; err == nil && j < len(res); j++ {
			if len(res[j].States) != 1 || len(res[j].Room) != 1 {
				err = fmt.Errorf("counter store answered %d states for one gate: %w", len(res[j].States), enforce.ErrOutcomeUnknown)
			}
		}
		if err != nil {
			return fmt.Errorf("lease a block of %q: %w", need[todo[0]].gate.Key, err)
		}
		s.refills.Add(int64(len(reqs)))
		again := todo[:0]
		for j, k := range todo {
			ls, r := need[k], res[j]
			if r.Allowed && r.Room[0] {
				until := now.Add(s.opts.Time).UnixNano()
				if ls.gate.KnownAlgorithm() != enforce.AlgorithmTokenBucket {
					until = min(until, (algorithm.WindowIndex(now, ls.gate.Window)+1)*int64(ls.gate.Window))
				}
				ls.view.Store(&leaseView{until: until, taken: now, st: r.States[0], block: want[k]})
				ls.units.Store(want[k] - cost)
				got[k] = true
				continue
			}
			// Not a whole block: take what is left, if the call fits.
			a := algorithm.Gate{Algorithm: string(ls.gate.KnownAlgorithm()), Window: ls.gate.Window, Limit: ls.gate.Limit, Burst: ls.gate.Burst}
			st := r.States[0]
			left, _ := algorithm.Describe(a, algorithm.State{Count: st.Count, Previous: st.Previous, TAT: st.TAT}, now)
			if left < cost || try == 1 {
				ls.dryUntil.Store(now.Add(min(s.opts.Time/10, 100*time.Millisecond)).UnixNano())
				continue
			}
			want[k] = min(left, ls.block)
			again = append(again, k)
		}
		todo = again
	}
	return nil
}

// unused empties ls's block (under ls.mu) and says what of it can go
// back: the units left, and for a token bucket no more of them than are
// still ahead in the bucket's TAT (tokens that have dripped back since the
// block was taken are not given back twice).
func (s *Store) unused(ls *lease, now time.Time) (enforce.Return, bool) {
	v := ls.view.Load()
	left := ls.units.Swap(0)
	if v == nil || left <= 0 {
		return enforce.Return{}, false
	}
	if ls.gate.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
		T := algorithm.Interval(ls.gate.Window, ls.gate.Limit)
		end := v.st.TAT.UnixNano()
		start := end - v.block*T
		left = min(left, max(end-max(now.UnixNano(), start), 0)/T)
		if left <= 0 {
			return enforce.Return{}, false
		}
	}
	return enforce.Return{Gate: ls.gate, Units: left, Taken: v.taken, Now: now}, true
}

// giveBack returns rs to the store in one call.
func (s *Store) giveBack(ctx context.Context, rs []enforce.Return) {
	if len(rs) == 0 {
		return
	}
	deadline := time.Now().Add(s.timeout)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout+answerGrace)
	defer cancel()
	if err := s.inner.ReturnUnused(rctx, rs, deadline); err != nil {
		// It stays counted: errs toward refusing, never admitting.
		s.log.Warn("lease give back failed", "key", rs[0].Gate.Key, "leases", len(rs), "err", err)
		return
	}
	for _, r := range rs {
		s.returned.Add(r.Units)
	}
}

// retire gives back ls's block and drops it from the map.
func (s *Store) retire(ls *lease) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	s.retireLocked(ls)
}

// retireLocked is retire with ls.mu held.
func (s *Store) retireLocked(ls *lease) {
	if ls.dead {
		return
	}
	ls.dead = true
	ls.retired.Store(true)
	ls.flushMetrics(s)
	if r, ok := s.unused(ls, s.now()); ok {
		s.giveBack(context.Background(), []enforce.Return{r})
	}
	if s.leases.CompareAndDelete(ls.gate.Key, ls) {
		s.n.Add(-1)
	}
}

// ended says whether ls's lease ended by t (ns): its block's lease time
// passed, or it never got a block within a lease time of being made.
func (s *Store) ended(ls *lease, t int64) bool {
	view := ls.view.Load()
	return (view == nil && t >= ls.created+int64(s.opts.Time)) || (view != nil && t >= view.until)
}

// reap retires the leases that ended by now. A lease whose lock is held
// is being refilled (or retired) and is left to the next pass: waiting
// for that lock would retire the block the refill just took, given back
// and dropped the moment it came.
func (s *Store) reap(now time.Time) {
	t := now.UnixNano()
	s.leases.Range(func(_, v any) bool {
		ls := v.(*lease)
		ls.flushMetrics(s)
		if !s.ended(ls, t) || !ls.mu.TryLock() {
			return true
		}
		if s.ended(ls, t) { // not refilled meanwhile
			s.retireLocked(ls)
		}
		ls.mu.Unlock()
		return true
	})
}

// flushMetrics adds what ls decided since the last flush to the Store's
// count.
func (ls *lease) flushMetrics(s *Store) {
	if n := ls.decidedN.Swap(0); n > 0 {
		s.decided.Add(n)
	}
}

// flushMetrics flushes every lease's counts (before a scrape).
func (s *Store) flushMetrics() {
	s.leases.Range(func(_, v any) bool {
		v.(*lease).flushMetrics(s)
		return true
	})
}

// localState is what a leased gate reports, its local view: the counter
// as the block's take left it, less what this replica has not used yet of
// the block (so Remaining counts the block's rest as available). Other
// replicas' calls since the block was taken are not in it.
func (ls *lease) localState() enforce.GateState {
	v := ls.view.Load()
	if v == nil {
		return enforce.GateState{}
	}
	left := ls.units.Load()
	st := v.st
	if ls.gate.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
		if !st.TAT.IsZero() {
			st.TAT = st.TAT.Add(-time.Duration(left * algorithm.Interval(ls.gate.Window, ls.gate.Limit)))
		}
	} else {
		st.Count = max(st.Count-left, 0)
	}
	return st
}

// countLocal counts a call decided wholly from blocks, ls the lease of
// its first gate.
func (s *Store) countLocal(ls *lease) {
	ls.decidedN.Add(1)
	if ls.retired.Load() {
		// Retired since this call took from it: the retirement flushed
		// its count already, and no reap or scrape sees it again, so
		// this call's is flushed here (retireLocked sets retired before
		// it flushes: one of the two sees it).
		ls.flushMetrics(s)
	}
}

// maxLeasedGates bounds the gates of a call the lease path handles (more
// go to the store as before).
const maxLeasedGates = 8

// answerGrace is how long past its deadline a block's Take or a
// give-back waits for the store's own answer, as the Enforcer's batcher
// waits for a decision's: the store is given the deadline and aborts at
// it, and the grace covers that abort's way back.
const answerGrace = 200 * time.Millisecond

// TakeLocal decides a call some of whose gates are leased: those are
// decided from their blocks, the rest by one take through next (the
// Enforcer's batcher); if that denies, the local part is put back. A call
// none of whose gates is leased goes through next whole; so does every
// call once the Store is closed.
func (s *Store) TakeLocal(ctx context.Context, req enforce.TakeRequest, into enforce.TakeResult, next enforce.TakeFunc) (enforce.TakeResult, error) {
	gates, cost, consume, now := req.Gates, req.Cost, req.Consume, req.Now
	if len(gates) > maxLeasedGates || cost < 1 || s.closed.Load() {
		return next(ctx, req)
	}
	var ls [maxLeasedGates]*lease
	var local [maxLeasedGates]bool
	leased := false
	for i := range gates {
		if ls[i] = s.get(gates[i], cost, now); ls[i] != nil {
			leased = true
		}
	}
	if !leased {
		return next(ctx, req)
	}
	putBack := func() {
		for i := range gates {
			if local[i] {
				ls[i].putBack(cost)
				local[i] = false
			}
		}
	}
	all := true
	var needBuf [maxLeasedGates]*lease
	var needAt [maxLeasedGates]int
	need := needBuf[:0]
	for i := range gates {
		ls := ls[i]
		if ls == nil {
			all = false
			continue
		}
		if !consume {
			// A peek never takes a block: it reports the block's view if
			// it has room, else asks the store.
			v := ls.view.Load()
			local[i] = v != nil && now.UnixNano() < v.until && ls.units.Load() >= cost
			all = all && local[i]
			continue
		}
		if ls.tryTake(cost, now) {
			local[i] = true
			continue
		}
		if now.UnixNano() < ls.dryUntil.Load() {
			all = false // the store decides it, as without leases
			continue
		}
		needAt[len(need)] = i
		need = append(need, ls)
	}
	if len(need) > 0 {
		var gotBuf [maxLeasedGates]bool
		got := gotBuf[:len(need)]
		if err := s.refill(ctx, need, got, cost, now); err != nil {
			for k, ok := range got {
				if ok {
					local[needAt[k]] = true // put back below with the rest
				}
			}
			putBack()
			return enforce.TakeResult{}, err
		}
		for k, ok := range got {
			local[needAt[k]] = ok
			all = all && ok
		}
	}
	res := into
	if len(res.Room) != len(gates) || len(res.States) != len(gates) {
		res = enforce.TakeResult{Room: make([]bool, len(gates)), States: make([]enforce.GateState, len(gates))}
	}
	res.Allowed = true
	if all {
		for i := range gates {
			res.Room[i], res.States[i] = true, ls[i].localState()
		}
		s.countLocal(ls[0])
		return res, nil
	}
	// The rest in one take through the Enforcer's batcher.
	var idx [maxLeasedGates]int
	rest := idx[:0]
	sub := enforce.TakeRequest{Cost: cost, Consume: consume, Now: now}
	for i := range gates {
		if !local[i] {
			rest = append(rest, i)
			sub.Gates = append(sub.Gates, gates[i]) // a subset of sorted gates: sorted
		}
	}
	r, err := next(ctx, sub)
	if err == nil && (len(r.Room) != len(rest) || len(r.States) != len(rest)) {
		err = fmt.Errorf("counter store answered %d states for %d gates: %w", len(r.States), len(rest), enforce.ErrOutcomeUnknown)
	}
	if err != nil {
		if consume {
			putBack()
		}
		return enforce.TakeResult{}, err
	}
	decidedHere := local
	if !r.Allowed && consume {
		putBack()
	}
	res.Allowed = r.Allowed
	for j, i := range rest {
		res.Room[i], res.States[i] = r.Room[j], r.States[j]
	}
	for i := range gates {
		if decidedHere[i] {
			res.Room[i], res.States[i] = true, ls[i].localState()
		}
	}
	return res, nil
}
