package plan

import (
	"hash/maphash"
	"maps"
	"time"
)

// Member is a membership as a plan reads it: the groups that select the
// definitions applying to its subject, and its quarantine.
type Member struct {
	Groups             []string
	Quarantined        bool
	QuarantineExpireAt time.Time // zero: no expiry
	// Lockout: the quarantine is an escalation lockout (the core's
	// lockout.go).
	Lockout bool
}

// QuarantinedAt reports whether the subject's quarantine applies at now.
func (m Member) QuarantinedAt(now time.Time) bool {
	return m.Quarantined && (m.QuarantineExpireAt.IsZero() || now.Before(m.QuarantineExpireAt))
}

func targetKey(entityType, name string) string { return entityType + ":" + name }

// memberShards splits the memberships so a change copies one shard, about
// 1/256 of them (400 at 100,000 memberships), instead of the whole map:
// cloning a 100,000-entry map costs about 30 ms and 10 MB on the
// development machine, a shard about 0.1 ms.
const memberShards = 256

// Members is the memberships by id, sharded by a hash of the id. The
// shards of a published index are never written: with copies the shards a
// change touches and shares the rest.
type Members struct {
	seed   maphash.Seed
	shards *[memberShards]map[string]Member
}

// NewMembers is an empty index, to Put memberships in before it is
// published.
func NewMembers() Members {
	return Members{seed: maphash.MakeSeed(), shards: new([memberShards]map[string]Member)}
}

func (x Members) shard(id string) int { return int(maphash.String(x.seed, id) % memberShards) }

// Get returns the membership of id (the zero Member when there is none).
func (x Members) Get(id string) (Member, bool) {
	if x.shards == nil {
		return Member{}, false
	}
	m, ok := x.shards[x.shard(id)][id]
	return m, ok
}

// Len counts the memberships.
func (x Members) Len() int {
	n := 0
	if x.shards != nil {
		for _, s := range x.shards {
			n += len(s)
		}
	}
	return n
}

// Put adds a membership while the index is being built (before it is
// published).
func (x Members) Put(id string, m Member) {
	i := x.shard(id)
	if x.shards[i] == nil {
		x.shards[i] = map[string]Member{}
	}
	x.shards[i][id] = m
}

// With returns a new index: x with changes applied (a nil Member deletes),
// copying only the shards they touch.
func (x Members) With(changes map[string]*Member) Members {
	shards := *x.shards
	var copied [memberShards]bool
	for id, m := range changes {
		i := x.shard(id)
		if !copied[i] {
			shards[i] = maps.Clone(shards[i])
			if shards[i] == nil {
				shards[i] = map[string]Member{}
			}
			copied[i] = true
		}
		if m == nil {
			delete(shards[i], id)
		} else {
			shards[i][id] = *m
		}
	}
	return Members{seed: x.seed, shards: &shards}
}

// Each calls f with every membership until f returns false.
func (x Members) Each(f func(id string, m Member) bool) {
	if x.shards == nil {
		return
	}
	for _, shard := range x.shards {
		for id, m := range shard {
			if !f(id, m) {
				return
			}
		}
	}
}
