package enforce

import (
	"hash/maphash"
	"sync/atomic"
	"time"
)

// exhaustedSlots bounds what a replica remembers of used-up gates: one
// direct-mapped slot per hash, a newer key replacing an older one, so the
// memory is bounded (keys are at most a few KiB) whatever the traffic.
const exhaustedSlots = 1 << 13

// exhaustedKeys remembers, per counter key, until when this replica last
// saw the gate without room for a call of cost 1. A decision the fail
// policy would answer open (the counter store failed or timed out) is
// still refused on such a gate: no algorithm gives room back before the
// wait it reported, so the call would be refused had the store answered.
// A caller whose limit is used up is thus never let through by a store
// outage or a replica too loaded to ask the store, on the replica that saw
// it used up. Writes happen on refusals only, reads on failures only: the
// allowed path never touches it.
type exhaustedKeys struct {
	seed  maphash.Seed
	slots [exhaustedSlots]atomic.Pointer[exhaustedKey]
}

type exhaustedKey struct {
	key          string
	algorithm    Algorithm
	limit, burst int64
	until        time.Time
}

func newExhaustedKeys() *exhaustedKeys { return &exhaustedKeys{seed: maphash.MakeSeed()} }

func (x *exhaustedKeys) slot(key string) *atomic.Pointer[exhaustedKey] {
	return &x.slots[maphash.String(x.seed, key)%exhaustedSlots]
}

// note remembers that g has no room for a call of cost 1 until until.
func (x *exhaustedKeys) note(g Gate, until time.Time) {
	x.slot(g.Key()).Store(&exhaustedKey{key: g.Key(), algorithm: g.Algorithm, limit: g.Limit, burst: g.Burst, until: until})
}

// until is when g has room again, if this replica knows it has none at
// now: it saw the same counter used up, counting the same way, at a limit
// (and burst) no lower than g's. A counter another limit shares (a
// descriptor's request override), or whose limit was raised since, is not
// known to be used up.
func (x *exhaustedKeys) until(g Gate, now time.Time) (time.Time, bool) {
	k := x.slot(g.Key()).Load()
	if k == nil || k.key != g.Key() || k.algorithm != g.Algorithm || g.Limit > k.limit || g.Burst > k.burst || !now.Before(k.until) {
		return time.Time{}, false
	}
	return k.until, true
}
