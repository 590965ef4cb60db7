package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// shardCount is how many locks the counters are spread over: enough that
// goroutines deciding calls on different counters rarely meet, few enough
// that locking every shard (Sweep) stays cheap.
const shardCount = 64

// minLazySweep is the smallest shard that sweeps itself on growth.
const minLazySweep = 1024

// DefaultMaxKeys is the counters a Store holds at most unless
// Options.MaxKeys says otherwise: about 125 MB of heap, at the 250 bytes a
// counter of a 49-byte key took on the development machine
// (docs/operations.md, "The in-memory counter store").
const DefaultMaxKeys = 500_000

// evictSample is how many counters of a full shard are looked at to make
// room for a new one: Go's map iteration starts at a random place, so
// this is a cheap random sample, and 8 is the sample Redis' approximated
// LRU found close enough to the true least recently used.
const evictSample = 8

// Store is an in-memory enforce.CounterStore: exact within one process,
// all or nothing per call. It is safe for concurrent use; the zero value
// is not ready, use New.
type Store struct {
	seed    maphash.Seed
	shards  [shardCount]shard
	evicted atomic.Int64
}

// Options tune a Store; the zero value takes the defaults.
type Options struct {
	// MaxKeys bounds the counters held: one per key and window (a sliding
	// window holds its previous one too), or per key's token bucket. It is
	// spread evenly over the 64 shards, at least one each. A new counter
	// in a full shard first makes room: a sampled counter whose window has
	// ended goes, else the sampled counter used least recently (never one
	// of the call's own). The evicted key starts again from a fresh
	// counter on its next call, so it is counted from zero: a flood of
	// distinct keys, more within one window than MaxKeys, forgets the
	// quietest counters rather than growing, and nothing is ever denied
	// because the store is full. 0 takes DefaultMaxKeys.
	MaxKeys int
}

// New returns an empty Store, with opts (at most one) or the defaults.
func New(opts ...Options) *Store {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	s := &Store{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].counters = map[counterID]*counter{}
		s.shards[i].sweepAt = minLazySweep
		s.shards[i].max = max(o.MaxKeys/shardCount+boolInt(i < o.MaxKeys%shardCount), 1)
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

type shard struct {
	mu       sync.Mutex
	counters map[counterID]*counter
	// latest is the latest TakeRequest.Now seen, in Unix nanoseconds: what
	// a lazy sweep counts as now.
	latest int64
	// sweepAt is the size at which the shard next sweeps itself: twice
	// what was left after the last sweep (at least minLazySweep), so the
	// lazy sweeps cost O(1) per counter created.
	sweepAt int
	// max is the counters the shard holds at most (Options.MaxKeys).
	max int
	// uses counts the reads and charges of the shard's counters: a
	// counter's used is the count at its last one (calls of one instant
	// are still ordered).
	uses int64
	_    [16]byte // 64 bytes: one shard per cache line
}

// counterID names one counter: a window of one key (fixed and sliding
// windows; windows of different lengths on one key are different
// counters), or a key's token bucket (window and index zero: one per key,
// whatever its rate).
type counterID struct {
	key    string
	algo   enforce.Algorithm
	window time.Duration
	index  int64
}

type counter struct {
	count int64
	// end is when the counter may go, in Unix nanoseconds: a fixed
	// window's end, a sliding window's end plus one window (it is the
	// previous window until then), a token bucket's TAT (full by then).
	end int64
	// used is the shard's uses at the last call that read or charged it:
	// a full shard evicts the least recently used (Options.MaxKeys).
	used int64
}

// Take decides reqs in order, each all or nothing; see
// enforce.CounterStore. The batch is checked first: a request the store
// cannot count (an unknown algorithm, a window that is not a whole number
// of seconds, a cost below 1, a negative limit or burst) fails the whole
// batch with an error wrapping enforce.ErrNotApplied, having changed
// nothing. A deadline already passed, or a context already ended, fails it
// with enforce.ErrTimedOut, also having changed nothing; past that check
// the store answers without waiting on anything but its own locks.
func (s *Store) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	for i, r := range reqs {
		if err := r.Check(); err != nil {
			return nil, fmt.Errorf("memory: call %d: %w: %w", i, enforce.ErrNotApplied, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: %w: %w", enforce.ErrTimedOut, err)
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		return nil, fmt.Errorf("memory: %w: the deadline passed before the batch was taken", enforce.ErrTimedOut)
	}
	out := make([]enforce.TakeResult, len(reqs))
	for i, r := range reqs {
		out[i] = s.take(r)
	}
	return out, nil
}

// arith is the gate as pkg/enforce/algorithm sees it.
func arith(g enforce.CounterGate, algo enforce.Algorithm) algorithm.Gate {
	return algorithm.Gate{Algorithm: string(algo), Window: g.Window, Limit: g.Limit, Burst: g.Burst}
}

// take decides one call under the locks of every shard its gates live in,
// taken in shard order so concurrent calls never deadlock: every gate is
// decided first (pkg/enforce/algorithm), and only if every enforce gate
// has room (and the call consumes) is each gate with room charged.
func (s *Store) take(r enforce.TakeRequest) enforce.TakeResult {
	n := len(r.Gates)
	res := enforce.TakeResult{Allowed: true, Room: make([]bool, n), States: make([]enforce.GateState, n)}
	if n == 0 {
		return res
	}
	now := r.Now.UnixNano()
	var (
		idBuf     [4]counterID
		shardBuf  [4]int
		lockedBuf [4]int
	)
	ids, shardOf := idBuf[:0], shardBuf[:0]
	for _, g := range r.Gates {
		algo := g.KnownAlgorithm()
		id := counterID{key: g.Key, algo: algo}
		if algo != enforce.AlgorithmTokenBucket {
			id.window, id.index = g.Window, floorDiv(now, int64(g.Window))
		}
		ids = append(ids, id)
		shardOf = append(shardOf, int(maphash.String(s.seed, g.Key)%shardCount))
	}
	locked := append(lockedBuf[:0], shardOf...)
	slices.Sort(locked)
	locked = slices.Compact(locked)
	for _, i := range locked {
		s.shards[i].mu.Lock()
	}
	defer func() {
		for _, i := range locked {
			s.shards[i].mu.Unlock()
		}
	}()
	for _, i := range locked {
		if sh := &s.shards[i]; now > sh.latest {
			sh.latest = now
		}
	}

	for j, id := range ids {
		st := s.state(shardOf[j], id, now)
		if sh := &s.shards[shardOf[j]]; sh.counters[id] != nil {
			sh.uses++
			sh.counters[id].used = sh.uses // a denied caller's counter is in use too
		}
		room, _ := algorithm.Decide(arith(r.Gates[j], id.algo), st, r.Now, r.Cost)
		res.States[j] = gateState(st)
		res.Room[j] = room
		if !room && r.Gates[j].Enforce {
			res.Allowed = false
		}
	}
	if !res.Allowed || !r.Consume {
		return res
	}
	for j, id := range ids {
		if !res.Room[j] {
			continue // a full shadow gate: it reports, it does not count
		}
		res.States[j] = gateState(s.put(shardOf[j], id, r.Gates[j], r.Cost, now, ids))
	}
	return res
}

// state reads the counter of id as of now (ns): a window's count (and,
// for a sliding window, the previous window's), or a bucket's TAT.
func (s *Store) state(shard int, id counterID, now int64) algorithm.State {
	counters := s.shards[shard].counters
	var st algorithm.State
	switch id.algo {
	case enforce.AlgorithmTokenBucket:
		if c := counters[id]; c != nil && c.end > now {
			st.TAT = time.Unix(0, c.end)
		}
	case enforce.AlgorithmSlidingWindow:
		if c := counters[id]; c != nil {
			st.Count = c.count
		}
		prev := id
		prev.index--
		if c := counters[prev]; c != nil {
			st.Previous = c.count
		}
	default:
		if c := counters[id]; c != nil {
			st.Count = c.count
		}
	}
	return st
}

// put charges cost to the counter of id (the call had room on it) and
// returns what it holds after. A key may appear twice in one call only by
// mistake; charging the stored counter, not the state read before, keeps
// it right even then (it is what Decide's taken state says otherwise).
// ids are the call's counters, which a full shard does not evict.
func (s *Store) put(shard int, id counterID, g enforce.CounterGate, cost, now int64, ids []counterID) algorithm.State {
	sh := &s.shards[shard]
	c := sh.counters[id]
	if c == nil && len(sh.counters) >= sh.max {
		s.evicted.Add(sh.makeRoom(ids))
	}
	sh.uses++
	if id.algo == enforce.AlgorithmTokenBucket {
		if c == nil {
			c = &counter{used: sh.uses}
			sh.counters[id] = c
			sh.maybeSweep()
		}
		c.end = max(c.end, now) + cost*algorithm.Interval(g.Window, g.Limit)
		return algorithm.State{TAT: time.Unix(0, c.end)}
	}
	if c == nil {
		ends := id.index + 1
		if id.algo == enforce.AlgorithmSlidingWindow {
			ends++ // it is the next window's previous one until then
		}
		c = &counter{end: ends * int64(id.window), used: sh.uses}
		sh.counters[id] = c
		sh.dropOld(id)
		sh.maybeSweep()
	}
	c.count += cost
	st := algorithm.State{Count: c.count}
	if id.algo == enforce.AlgorithmSlidingWindow {
		prev := id
		prev.index--
		if p := sh.counters[prev]; p != nil {
			st.Previous = p.count
		}
	}
	return st
}

// gateState is st as a TakeResult reports it.
func gateState(st algorithm.State) enforce.GateState {
	return enforce.GateState{Count: st.Count, Previous: st.Previous, TAT: st.TAT}
}

// floorDiv divides rounding toward minus infinity (times before 1970 have
// negative window indexes, as floor(now / window) says).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// dropOld removes the window of id's key that has ended once id opens:
// for a fixed window the one before it, for a sliding window the one
// before that (the one before it is still its previous window). Once a
// window is taken from, those have ended (by the clock of the call that
// opened it). Keys idle for longer are left to the sweeps.
func (sh *shard) dropOld(id counterID) {
	old := id
	old.index--
	if id.algo == enforce.AlgorithmSlidingWindow {
		old.index--
	}
	if c, ok := sh.counters[old]; ok && c.end <= sh.latest {
		delete(sh.counters, old)
	}
}

// makeRoom removes counters of the full shard: of a sample of
// evictSample, those whose windows have ended by the latest time the
// shard has seen, or if none has, the one used least recently, never one
// of keep. It returns how many live counters it evicted (0 or 1).
func (sh *shard) makeRoom(keep []counterID) int64 {
	var (
		oldest  counterID
		found   bool
		ended   bool
		sampled int
	)
	for id, c := range sh.counters {
		if sampled == evictSample {
			break
		}
		if slices.Contains(keep, id) {
			continue
		}
		sampled++
		if c.end <= sh.latest {
			delete(sh.counters, id)
			ended = true
			continue
		}
		if !found || c.used < sh.counters[oldest].used {
			oldest, found = id, true
		}
	}
	if ended || !found {
		return 0
	}
	delete(sh.counters, oldest)
	return 1
}

// Evicted is how many live counters the store has evicted to stay within
// Options.MaxKeys: each is a key counted from zero again on its next call.
func (s *Store) Evicted() int64 { return s.evicted.Load() }

// maybeSweep sweeps the shard, by the latest time it has seen, once it has
// doubled since its last sweep: memory stays within about twice the live
// counters even when nobody calls Sweep.
func (sh *shard) maybeSweep() {
	if len(sh.counters) < sh.sweepAt {
		return
	}
	sh.sweep(sh.latest)
	sh.sweepAt = max(2*len(sh.counters), minLazySweep)
}

func (sh *shard) sweep(now int64) int64 {
	var removed int64
	for id, c := range sh.counters {
		if c.end <= now {
			delete(sh.counters, id)
			removed++
		}
	}
	return removed
}

// Sweep removes the counters whose windows ended by now, one shard at a
// time (each briefly locked).
func (s *Store) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var removed int64
	t := now.UnixNano()
	for i := range s.shards {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		removed += sh.sweep(t)
		sh.sweepAt = max(2*len(sh.counters), minLazySweep)
		sh.mu.Unlock()
	}
	return removed, nil
}

// Len is how many counters the store holds, ended windows not yet swept
// included.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.counters)
		sh.mu.Unlock()
	}
	return n
}

var _ enforce.CounterStore = (*Store)(nil)

// BackendName is "memory", the metrics' backend label.
func (s *Store) BackendName() string { return "memory" }

// Capabilities: the memory store gives back and resets.
func (s *Store) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{GiveBack: true, Reset: true}
}

// TakeLocal: the memory store decides nothing apart from Take (it does
// not declare Local).
func (s *Store) TakeLocal(context.Context, enforce.TakeRequest, enforce.TakeResult, enforce.TakeFunc) (enforce.TakeResult, error) {
	return enforce.TakeResult{}, fmt.Errorf("memory: take local: %w", enforce.ErrNotImplemented)
}

// Reset removes every counter of the gates' keys, whatever its window or
// algorithm (enforce.CounterStore: a successful authentication resets its
// address's failures). It scans each key's shard.
func (s *Store) Reset(ctx context.Context, gates []enforce.CounterGate, _, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("reset counters: %w: %w", enforce.ErrTimedOut, err)
	}
	for _, g := range gates {
		sh := &s.shards[maphash.String(s.seed, g.Key)%shardCount]
		sh.mu.Lock()
		for id := range sh.counters {
			if id.key == g.Key {
				delete(sh.counters, id)
			}
		}
		sh.mu.Unlock()
	}
	return nil
}
