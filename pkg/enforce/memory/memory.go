package memory

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// shardCount is how many locks the counters are spread over: enough that
// goroutines deciding calls on different counters rarely meet, few enough
// that locking every shard (Sweep) stays cheap.
const shardCount = 64

// minLazySweep is the smallest shard that sweeps itself on growth.
const minLazySweep = 1024

// Store is an in-memory enforce.CounterStore: exact within one process,
// all or nothing per call. It is safe for concurrent use; the zero value
// is not ready, use New.
type Store struct {
	seed   maphash.Seed
	shards [shardCount]shard
}

// New returns an empty Store.
func New() *Store {
	s := &Store{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].counters = map[counterID]*counter{}
		s.shards[i].sweepAt = minLazySweep
	}
	return s
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
	_       [32]byte // 64 bytes: one shard per cache line
}

// counterID names one fixed window of one key. Windows of different
// lengths on one key are different counters.
type counterID struct {
	key    string
	window time.Duration
	index  int64
}

type counter struct {
	count int64
	// end is when the window ends, in Unix nanoseconds.
	end int64
}

// Take decides reqs in order, each all or nothing; see
// enforce.CounterStore. The batch is checked first: a request the store
// cannot count (an unknown algorithm, a window that is not a whole number
// of seconds, a cost below 1, a negative limit) fails the whole batch with
// an error wrapping enforce.ErrNotApplied, having changed nothing. A
// deadline already passed, or a context already ended, fails it with
// enforce.ErrTimedOut, also having changed nothing; past that check the
// store answers without waiting on anything but its own locks.
func (s *Store) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	for i, r := range reqs {
		if err := check(r); err != nil {
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

func check(r enforce.TakeRequest) error {
	if r.Cost < 1 {
		return fmt.Errorf("cost %d: must be at least 1", r.Cost)
	}
	for _, g := range r.Gates {
		switch {
		case g.Algorithm != enforce.AlgorithmFixedWindow && g.Algorithm != "":
			return fmt.Errorf("gate %q: algorithm %q: this store counts only %q", g.Key, g.Algorithm, enforce.AlgorithmFixedWindow)
		case g.Window < time.Second || g.Window%time.Second != 0:
			return fmt.Errorf("gate %q: window %v: must be a whole number of seconds", g.Key, g.Window)
		case g.Limit < 0:
			return fmt.Errorf("gate %q: limit %d: must not be negative", g.Key, g.Limit)
		}
	}
	return nil
}

// take decides one call under the locks of every shard its gates live in,
// taken in shard order so concurrent calls never deadlock.
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
		w := int64(g.Window)
		idx := floorDiv(now, w)
		ids = append(ids, counterID{key: g.Key, window: g.Window, index: idx})
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

	counters := make([]*counter, n)
	for j, id := range ids {
		c := s.shards[shardOf[j]].counters[id]
		var have int64
		if c != nil {
			have = c.count
		}
		counters[j] = c
		res.States[j].Count = have
		res.Room[j] = have+r.Cost <= r.Gates[j].Limit
		if !res.Room[j] && r.Gates[j].Enforce {
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
		c := counters[j]
		if c == nil {
			// A key may appear twice in one call only by mistake; looking
			// it up again keeps the count right even then.
			sh := &s.shards[shardOf[j]]
			if c = sh.counters[id]; c == nil {
				c = &counter{end: (id.index + 1) * int64(id.window)}
				sh.counters[id] = c
				sh.dropPrevious(id)
				sh.maybeSweep()
			}
		}
		c.count += r.Cost
		res.States[j].Count = c.count
	}
	return res
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

// dropPrevious removes the window before id on the same key: once a
// window is taken from, the one before it has ended (by the clock of the
// call that opened it). Keys idle for longer are left to the sweeps.
func (sh *shard) dropPrevious(id counterID) {
	prev := id
	prev.index--
	if c, ok := sh.counters[prev]; ok && c.end <= sh.latest {
		delete(sh.counters, prev)
	}
}

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
