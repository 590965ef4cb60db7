package enforce

import (
	"hash/maphash"
	"net/netip"
	"sync/atomic"
	"time"
)

// gateCacheSize is the number of slots of a snapshot's gate cache: a
// caller and target pair per slot, so a few thousand hot pairs keep their
// gates while a long tail of one-off calls only replaces each other.
const gateCacheSize = 4096

// gateCache keeps, per snapshot, the gates a call built, so that the next
// call of the same caller on the same target copies them rather than
// walking the caller's groups and concatenating counter keys again (about
// half the CPU of a decision decided from a lease). The gates of a call
// depend only on the snapshot, on the fields of gateCacheKey and, through
// the window a gate's Reset names, on now; a new snapshot starts an empty
// cache, so a definition or membership change is never served stale.
//
// It is direct-mapped: a call's key hashes to one slot, which holds the
// last call that hashed there. Memory is bounded by the slot count and
// the gates of one call; a lookup takes no lock; an entry, once
// published, is never written again.
type gateCache struct {
	seed  maphash.Seed
	slots [gateCacheSize]atomic.Pointer[gateEntry]
}

// gateCacheKey is everything of a call (and of the snapshot's view of it,
// admin) the gates of a call are built from. Each field is in the form the
// gates are built from (normalized), so calls that differ only in spelling
// share an entry. A call with descriptors is not cached.
type gateCacheKey struct {
	username, clientID, team string
	targetType, targetName   string
	tool, kind, method, path string
	ip                       netip.Addr
	admin                    bool
}

type gateEntry struct {
	key   gateCacheKey
	gates []Gate // sorted as take sorts them; never modified
	// leases[i] is the lease gates[i] was last decided from (nil: none
	// yet); takeLeased uses it while it is not retired.
	leases [maxLeasedGates]atomic.Pointer[lease]
}

func newGateCache() *gateCache { return &gateCache{seed: maphash.MakeSeed()} }

// get copies the cached gates of key into a new slice, with each gate's
// Reset moved to the window now is in, and returns their entry; ok is
// false on a miss.
func (gc *gateCache) get(key *gateCacheKey, now time.Time) ([]Gate, *gateEntry, bool) {
	if gc == nil {
		return nil, nil, false
	}
	e := gc.slots[maphash.Comparable(gc.seed, *key)%gateCacheSize].Load()
	if e == nil || e.key != *key {
		return nil, nil, false
	}
	if len(e.gates) == 0 {
		return nil, e, true
	}
	gates := make([]Gate, len(e.gates))
	copy(gates, e.gates)
	unix := now.Unix()
	for i := range gates {
		// As newGate: the end of the window now is in.
		if w := int64(gates[i].WindowSeconds); w > 0 {
			gates[i].Reset = time.Unix((unix/w+1)*w, 0)
		}
	}
	return gates, e, true
}

// put publishes a copy of gates, as built for key, in key's slot, and
// returns its entry (nil without a cache).
func (gc *gateCache) put(key *gateCacheKey, gates []Gate) *gateEntry {
	if gc == nil {
		return nil
	}
	e := &gateEntry{key: *key}
	if len(gates) > 0 {
		e.gates = make([]Gate, len(gates))
		copy(e.gates, gates)
	}
	gc.slots[maphash.Comparable(gc.seed, *key)%gateCacheSize].Store(e)
	return e
}
