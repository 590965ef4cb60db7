package snapshot

import (
	"sync"
	"sync/atomic"
	"time"
)

// recentLockoutMemory bounds how long a replica remembers a lockout it
// wrote itself. Its own change notice brings the lockout into its snapshot
// within milliseconds, and the reload that reads the lockout's membership
// (or everything) forgets it; until then the caller's next calls must not
// pass on this replica. The bound only matters when that notice is lost.
const recentLockoutMemory = 5 * time.Second

// Recent are the escalation lockouts this replica's observers wrote
// (enforce.Verdict.Lockout), by the locked caller's membership id, until its
// snapshot holds them.
type Recent struct {
	n     atomic.Int32 // entries: the hot path looks no further while 0
	mu    sync.RWMutex
	m     map[string]recentLockout
	swept time.Time // when the forgotten entries were last removed
}

type recentLockout struct {
	until  time.Time // the lockout's end
	forget time.Time // when the snapshot holds it for sure
	// reloads is how many reloads had started when it was written: a
	// later one that reads its membership has the lockout, or its removal.
	reloads uint64
}

// Add remembers a lockout of id until until, written at now, after reloads
// reloads had started.
func (r *Recent) Add(id string, until, now time.Time, reloads uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]recentLockout{}
	}
	r.m[id] = recentLockout{until: until, forget: now.Add(recentLockoutMemory), reloads: reloads}
	r.n.Store(int32(len(r.m)))
}

// settled forgets the lockouts a reload read again: the reload was started
// after they were written (its number is above theirs) and read their
// memberships (read names them, or is nil for everything), so the
// snapshot it made holds them, or their removal by an operator.
func (r *Recent) settled(reload uint64, read func(id string) bool) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, l := range r.m {
		if l.reloads < reload && (read == nil || read(id)) {
			delete(r.m, id)
		}
	}
	r.n.Store(int32(len(r.m)))
}

// Find reports the end of a lockout of id this replica wrote and still
// remembers at now. A lookup is a read lock and a map index; the entries
// whose time is up are removed at most once a second, so a storm of
// lockouts costs the other callers' decisions little.
func (r *Recent) Find(id string, now time.Time) (time.Time, bool) {
	if r.n.Load() == 0 {
		return time.Time{}, false
	}
	r.mu.RLock()
	l, ok := r.m[id]
	sweep := now.Sub(r.swept) >= time.Second
	r.mu.RUnlock()
	if sweep {
		r.mu.Lock()
		if now.Sub(r.swept) >= time.Second {
			for k, e := range r.m {
				if !now.Before(e.forget) || !now.Before(e.until) {
					delete(r.m, k)
				}
			}
			r.swept = now
			r.n.Store(int32(len(r.m)))
		}
		r.mu.Unlock()
	}
	if !ok || !now.Before(l.forget) || !now.Before(l.until) {
		return time.Time{}, false
	}
	return l.until, true
}

// Empty reports whether no lockout is remembered: the hot path looks no
// further.
func (r *Recent) Empty() bool { return r.n.Load() == 0 }
