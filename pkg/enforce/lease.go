package enforce

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Leases (docs/design/leases.md). An Enforcer with
// Options.Leases takes a block of a hot gate's capacity from the shared
// counter in one ordinary Take (cost = the block, that gate alone: the
// shared count includes it at once, so replicas together never admit past
// the limit), then decides later calls on that key in memory until the
// block or its lease time runs out, and gives back what it did not use.
// Which gates are leased: hot keys (or every key, LeaseOptions.All),
// unless the gate's definition says otherwise (lease never or always:
// leaseMode, get).

// LeaseOptions turn leases on (Options.Leases).
type LeaseOptions struct {
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
	// (ratelimit.Definition.Lease): never is not leased even with All,
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
}

// leaser holds an Enforcer's leases.
type leaser struct {
	opts LeaseOptions
	// store gives back what a lease did not use (New refuses leases over
	// a store without CounterCapabilities.GiveBack).
	store   CounterStore
	timeout time.Duration
	now     func() time.Time
	log     interface{ Warn(string, ...any) }

	leases sync.Map // key string -> *lease
	n      atomic.Int64

	seed maphash.Seed
	hot  []atomic.Uint64 // per slot: second<<24 | count (count saturates)

	allowed  prometheus.Counter
	returned atomic.Int64
	refills  atomic.Int64
}

// lease is one key's block. units is the part left; view says until when
// it may be used and what the shared counter held when it was taken.
type lease struct {
	gate  CounterGate // fixed for the lease's life
	block int64
	units atomic.Int64
	// allowN and decidedN are the gate checks and the decisions decided
	// from the block not yet added to allow and to the leaser's allowed.
	// They sit beside units, whose cache line every local decision writes
	// anyway: two cores adding to shared Prometheus counters on each call
	// cost an eighth of a local decision. flushMetrics adds them, at
	// every scrape and every reap.
	allowN, decidedN atomic.Int64
	view             atomic.Pointer[leaseView]
	// allow is the gate's rlctl_enforce_gate_checks_total{outcome=allow}.
	allow prometheus.Counter

	mu   sync.Mutex // held to refill or retire
	dead bool       // retired and out of the map (under mu)
	// retired is dead, readable without mu: a gate cache entry's hint
	// (gatecache.go) is dropped once its lease is retired.
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
	until int64     // ns: the lease's end
	taken time.Time // the block's TakeRequest.Now
	st    GateState // the counter after the block was taken
	block int64     // the units taken
}

func newLeaser(opts LeaseOptions, store CounterStore, timeout time.Duration, now func() time.Time, m *metrics) *leaser {
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
	l := &leaser{opts: opts, store: store, timeout: timeout, now: now, seed: maphash.MakeSeed(),
		hot: make([]atomic.Uint64, opts.TrackerSize), allowed: m.checks.WithLabelValues("allowed")}
	return l
}

// BlockSize is the block an enforcer leases of g: clamp(rate × leaseTime,
// 1, capacity / (2 × replicas)), rate = Limit / Window, capacity = Limit
// (a token bucket's Burst). 0 when the capacity is below 2 × replicas: a
// gate that small is decided by the store.
func BlockSize(g CounterGate, leaseTime time.Duration, replicas int) int64 {
	capacity := g.Limit
	if g.KnownAlgorithm() == AlgorithmTokenBucket && g.Burst > 0 {
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

// seen counts one call on key in the hot-key tracker and says whether the
// key is hot.
func (l *leaser) seen(key string, now time.Time) bool {
	if l.opts.All {
		return true
	}
	slot := &l.hot[maphash.String(l.seed, key)%uint64(len(l.hot))]
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
			return int(next&(1<<24-1)) > l.opts.HotRate
		}
	}
}

// leaseMode is a gate's definition's say in leases
// (ratelimit.Definition.Lease). The values are ordered by precedence: of
// a bucket several definitions share (buildGates), the greatest applies,
// so never on any of them wins over always, which wins over auto.
type leaseMode uint8

const (
	leaseAuto   leaseMode = iota // the enforcer decides: hot keys, or All
	leaseAlways                  // leased from the first call
	leaseNever                   // never leased
)

// leaseModeOf is d's lease mode; an unknown value (validation refuses
// it) is auto.
func leaseModeOf(d ratelimit.Definition) leaseMode {
	switch d.Lease {
	case ratelimit.LeaseNever:
		return leaseNever
	case ratelimit.LeaseAlways:
		return leaseAlways
	}
	return leaseAuto
}

// get is the lease of g's key for a call of cost, creating an empty one
// for a hot key (any key with All, or a gate whose definition says lease
// always); nil when the gate is not leased (its definition says never, its
// block would be 0, or the key is not hot).
func (l *leaser) get(g *Gate, cg CounterGate, cost int64, now time.Time, m *metrics) *lease {
	v, ok := l.leases.Load(cg.Key)
	if ok {
		ls := v.(*lease)
		if ls.gate == cg && g.lease != leaseNever {
			if cost > ls.block {
				return nil
			}
			return ls
		}
		// The definition changed (a new limit, or lease never, say): the
		// old block is given back, the key starts again.
		l.retire(ls)
	}
	switch g.lease {
	case leaseNever:
		return nil
	case leaseAuto:
		if !l.seen(cg.Key, now) {
			return nil
		}
	}
	block := BlockSize(cg, l.opts.Time, l.opts.Replicas)
	if block < 1 || cost > block {
		return nil
	}
	if l.n.Load() >= int64(l.opts.MaxLeases) {
		return nil
	}
	ls := &lease{gate: cg, block: block, created: now.UnixNano(),
		allow: m.gateChecks.WithLabelValues(axisLabel(g.Axis), g.EntityType, "allow")}
	if v, loaded := l.leases.LoadOrStore(cg.Key, ls); loaded {
		ls = v.(*lease)
		if ls.gate != cg || cost > ls.block {
			return nil
		}
		return ls
	}
	l.n.Add(1)
	return ls
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
func (l *leaser) refill(ctx context.Context, need []*lease, got []bool, cost int64, now time.Time) error {
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
		err = l.refillOwned(ctx, need, own, got, cost, now)
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
func (l *leaser) refillOwned(ctx context.Context, need []*lease, own []int, got []bool, cost int64, now time.Time) error {
	var rsBuf [maxLeasedGates]Return
	rs := rsBuf[:0]
	for _, k := range own {
		if r, ok := l.unused(need[k], now); ok {
			rs = append(rs, r)
		}
	}
	l.giveBack(ctx, rs)
	var wantBuf [maxLeasedGates]int64
	want := wantBuf[:len(need)]
	todo := append([]int(nil), own...)
	for _, k := range own {
		want[k] = need[k].block
	}
	for try := 0; try < 2 && len(todo) > 0; try++ {
		reqs := make([]TakeRequest, len(todo))
		for j, k := range todo {
			reqs[j] = TakeRequest{Gates: []CounterGate{need[k].gate}, Cost: want[k], Consume: true, Now: now}
		}
		deadline := time.Now().Add(l.timeout)
		if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
			deadline = d
		}
		tctx, cancel := context.WithDeadline(ctx, deadline.Add(answerGrace))
		res, err := l.store.Take(tctx, reqs, deadline)
		cancel()
		if err == nil && len(res) != len(reqs) {
			err = fmt.Errorf("counter store answered %d of %d calls: %w", len(res), len(reqs), ErrOutcomeUnknown)
		}
		for j := 0; err == nil && j < len(res); j++ {
			if len(res[j].States) != 1 || len(res[j].Room) != 1 {
				err = fmt.Errorf("counter store answered %d states for one gate: %w", len(res[j].States), ErrOutcomeUnknown)
			}
		}
		if err != nil {
			return fmt.Errorf("lease a block of %q: %w", need[todo[0]].gate.Key, err)
		}
		l.refills.Add(int64(len(reqs)))
		again := todo[:0]
		for j, k := range todo {
			ls, r := need[k], res[j]
			if r.Allowed && r.Room[0] {
				until := now.Add(l.opts.Time).UnixNano()
				if ls.gate.KnownAlgorithm() != AlgorithmTokenBucket {
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
				ls.dryUntil.Store(now.Add(min(l.opts.Time/10, 100*time.Millisecond)).UnixNano())
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
func (l *leaser) unused(ls *lease, now time.Time) (Return, bool) {
	v := ls.view.Load()
	left := ls.units.Swap(0)
	if v == nil || left <= 0 {
		return Return{}, false
	}
	if ls.gate.KnownAlgorithm() == AlgorithmTokenBucket {
		T := algorithm.Interval(ls.gate.Window, ls.gate.Limit)
		end := v.st.TAT.UnixNano()
		start := end - v.block*T
		left = min(left, max(end-max(now.UnixNano(), start), 0)/T)
		if left <= 0 {
			return Return{}, false
		}
	}
	return Return{Gate: ls.gate, Units: left, Taken: v.taken, Now: now}, true
}

// giveBack returns rs to the store in one call.
func (l *leaser) giveBack(ctx context.Context, rs []Return) {
	if len(rs) == 0 {
		return
	}
	deadline := time.Now().Add(l.timeout)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout+answerGrace)
	defer cancel()
	if err := l.store.ReturnUnused(rctx, rs, deadline); err != nil {
		// It stays counted: errs toward refusing, never admitting.
		l.log.Warn("lease give back failed", "key", rs[0].Gate.Key, "leases", len(rs), "err", err)
		return
	}
	for _, r := range rs {
		l.returned.Add(r.Units)
	}
}

// retire gives back ls's block and drops it from the map.
func (l *leaser) retire(ls *lease) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l.retireLocked(ls)
}

// retireLocked is retire with ls.mu held.
func (l *leaser) retireLocked(ls *lease) {
	if ls.dead {
		return
	}
	ls.dead = true
	ls.retired.Store(true)
	ls.flushMetrics(l)
	if r, ok := l.unused(ls, l.now()); ok {
		l.giveBack(context.Background(), []Return{r})
	}
	if l.leases.CompareAndDelete(ls.gate.Key, ls) {
		l.n.Add(-1)
	}
}

// ended says whether ls's lease ended by t (ns): its block's lease time
// passed, or it never got a block within a lease time of being made.
func (l *leaser) ended(ls *lease, t int64) bool {
	view := ls.view.Load()
	return (view == nil && t >= ls.created+int64(l.opts.Time)) || (view != nil && t >= view.until)
}

// reap retires the leases that ended by now. A lease whose lock is held
// is being refilled (or retired) and is left to the next pass: waiting
// for that lock would retire the block the refill just took, given back
// and dropped the moment it came.
func (l *leaser) reap(now time.Time) {
	t := now.UnixNano()
	l.leases.Range(func(_, v any) bool {
		ls := v.(*lease)
		ls.flushMetrics(l)
		if !l.ended(ls, t) || !ls.mu.TryLock() {
			return true
		}
		if l.ended(ls, t) { // not refilled meanwhile
			l.retireLocked(ls)
		}
		ls.mu.Unlock()
		return true
	})
}

// flushMetrics adds what ls decided since the last flush to the
// Prometheus counters.
func (ls *lease) flushMetrics(l *leaser) {
	if n := ls.allowN.Swap(0); n > 0 {
		ls.allow.Add(float64(n))
	}
	if n := ls.decidedN.Swap(0); n > 0 {
		l.allowed.Add(float64(n))
	}
}

// flushMetrics flushes every lease's counts (before a scrape).
func (l *leaser) flushMetrics() {
	l.leases.Range(func(_, v any) bool {
		v.(*lease).flushMetrics(l)
		return true
	})
}

// close retires every lease (Enforcer.Close).
func (l *leaser) close() {
	l.leases.Range(func(_, v any) bool {
		l.retire(v.(*lease))
		return true
	})
}

// localState is what a leased gate reports, its local view: the counter
// as the block's take left it, less what this replica has not used yet of
// the block (so Remaining counts the block's rest as available). Other
// replicas' calls since the block was taken are not in it.
func (ls *lease) localState() (GateState, int64) {
	v := ls.view.Load()
	left := ls.units.Load()
	if v == nil {
		return GateState{}, left
	}
	st := v.st
	if ls.gate.KnownAlgorithm() == AlgorithmTokenBucket {
		if !st.TAT.IsZero() {
			st.TAT = st.TAT.Add(-time.Duration(left * algorithm.Interval(ls.gate.Window, ls.gate.Limit)))
		}
	} else {
		st.Count = max(st.Count-left, 0)
	}
	return st, left
}

// LeaseStats is what an Enforcer's leases did (Enforcer.LeaseStats).
type LeaseStats struct {
	// Leases held now.
	Leases int64
	// Refills is how many blocks were taken from the store.
	Refills int64
	// Returned is how many unused units were given back.
	Returned int64
}

// LeaseStats reports the Enforcer's leases (zero when leases are off).
func (e *Enforcer) LeaseStats() LeaseStats {
	if e.leases == nil {
		return LeaseStats{}
	}
	return LeaseStats{Leases: e.leases.n.Load(), Refills: e.leases.refills.Load(), Returned: e.leases.returned.Load()}
}

// maxLeasedGates bounds the gates of a call the lease path handles (more
// go to the store as before).
const maxLeasedGates = 8

// takeLeased decides a call some of whose gates are leased: those are
// decided from their blocks, the rest by one take from the store; if the
// store denies, the local part is put back. ok is false when no gate of
// the call is leased (the caller takes the usual path).
func (e *Enforcer) takeLeased(ctx context.Context, c Call, gates []Gate, hints *callView, cost int64, consume bool, now time.Time) (d Decision, err error, ok bool) {
	if len(gates) > maxLeasedGates {
		return Decision{}, nil, false
	}
	var ls [maxLeasedGates]*lease
	var local [maxLeasedGates]bool
	any := false
	for i := range gates {
		// A hint is a lease of this very gate (the view's gates are
		// this call's, and a changed definition is a new snapshot with
		// new views): usable until it is retired.
		if hints != nil {
			if h := hints.leases[i].Load(); h != nil && !h.retired.Load() && cost <= h.block {
				ls[i], any = h, true
				continue
			}
		}
		cg := gates[i].counterGate()
		if ls[i] = e.leases.get(&gates[i], cg, cost, now, e.metrics); ls[i] != nil {
			any = true
			if hints != nil {
				hints.leases[i].Store(ls[i])
			}
		}
	}
	if !any {
		return Decision{}, nil, false
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
		l := ls[i]
		if l == nil {
			all = false
			continue
		}
		if !consume {
			// A peek never takes a block: it reports the block's view if
			// it has room, else asks the store.
			v := l.view.Load()
			local[i] = v != nil && now.UnixNano() < v.until && l.units.Load() >= cost
			all = all && local[i]
			continue
		}
		if l.tryTake(cost, now) {
			local[i] = true
			continue
		}
		if now.UnixNano() < l.dryUntil.Load() {
			all = false // the store decides it, as without leases
			continue
		}
		needAt[len(need)] = i
		need = append(need, l)
	}
	if len(need) > 0 {
		var gotBuf [maxLeasedGates]bool
		got := gotBuf[:len(need)]
		if rerr := e.leases.refill(ctx, need, got, cost, now); rerr != nil {
			for k, ok := range got {
				if ok {
					local[needAt[k]] = true // put back below with the rest
				}
			}
			putBack()
			d, err := e.backendFailed(c, gates, rerr)
			return d, err, true
		}
		for k, ok := range got {
			local[needAt[k]] = ok
			all = all && ok
		}
	}
	if all {
		return e.localDecision(gates, ls[:len(gates)], cost, now), nil, true
	}
	// The rest in one take from the store.
	var idx [maxLeasedGates]int
	rest := idx[:0]
	req := TakeRequest{Cost: cost, Consume: consume, Now: now}
	for i := range gates {
		if !local[i] {
			rest = append(rest, i)
			req.Gates = append(req.Gates, gates[i].counterGate())
		}
	}
	res, err := e.roundTrip(ctx, req)
	if err != nil {
		if consume {
			putBack()
		}
		d, err := e.backendFailed(c, gates, err)
		return d, err, true
	}
	decidedHere := local
	if !res.Allowed && consume {
		putBack()
	}
	full := TakeResult{Allowed: res.Allowed, Room: make([]bool, len(gates)), States: make([]GateState, len(gates))}
	for j, i := range rest {
		full.Room[i], full.States[i] = res.Room[j], res.States[j]
	}
	for i := range gates {
		if decidedHere[i] {
			full.Room[i] = true
			full.States[i], _ = ls[i].localState()
		}
	}
	if consume {
		e.countOver(ctx, c, gates, &full, cost, now)
	}
	return e.decision(c, gates, full, cost, consume, now), nil, true
}

// localDecision is an allowed decision whose every gate was decided from
// its block: no I/O, and nothing allocated but the decision's gates.
func (e *Enforcer) localDecision(gates []Gate, ls []*lease, cost int64, now time.Time) Decision {
	d := Decision{Allowed: true, Reason: ReasonAllowed, Gates: gates}
	tightest := -1
	for i := range gates {
		g := &gates[i]
		st, _ := ls[i].localState()
		g.describe(st, true, cost, now)
		ls[i].allowN.Add(1)
		if !g.Shadow && (tightest < 0 || g.Remaining < gates[tightest].Remaining) {
			tightest = i
		}
	}
	if tightest >= 0 {
		d.Limit, d.Remaining, d.Reset = gates[tightest].Limit, gates[tightest].Remaining, gates[tightest].Reset
	}
	ls[0].decidedN.Add(1)
	// A lease retired since this call took from it flushed its counts
	// already, and no reap or scrape will see it again: this call's are
	// flushed here (retireLocked sets retired before it flushes, so one of
	// the two flushes sees them).
	for _, l := range ls {
		if l.retired.Load() {
			l.flushMetrics(e.leases)
		}
	}
	return d
}
