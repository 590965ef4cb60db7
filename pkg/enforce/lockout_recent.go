package enforce

import (
	"sync"
	"sync/atomic"
	"time"
)

// recentLockoutMemory is how long a replica remembers a lockout it wrote
// itself. Its own change notice brings the lockout into its snapshot within
// milliseconds; until then the caller's next calls must not pass on this
// replica. A lockout an operator ends within this time is still refused
// here until it passes (docs/operations.md, "Escalation lockouts").
const recentLockoutMemory = 5 * time.Second

// recentLockouts are the escalation lockouts this replica wrote, by the
// locked caller's membership id, until its snapshot holds them.
type recentLockouts struct {
	n  atomic.Int32 // entries: the hot path looks no further while 0
	mu sync.Mutex
	m  map[string]recentLockout
}

type recentLockout struct {
	until  time.Time // the lockout's end
	forget time.Time // when the snapshot holds it for sure
}

// add remembers a lockout of id until until, written at now.
func (r *recentLockouts) add(id string, until, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]recentLockout{}
	}
	r.m[id] = recentLockout{until: until, forget: now.Add(recentLockoutMemory)}
	r.n.Store(int32(len(r.m)))
}

// find reports the end of a lockout of id this replica wrote and still
// remembers at now, forgetting the entries whose time is up.
func (r *recentLockouts) find(id string, now time.Time) (time.Time, bool) {
	if r.n.Load() == 0 {
		return time.Time{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, l := range r.m {
		if !now.Before(l.forget) || !now.Before(l.until) {
			delete(r.m, k)
		}
	}
	r.n.Store(int32(len(r.m)))
	l, ok := r.m[id]
	return l.until, ok
}
