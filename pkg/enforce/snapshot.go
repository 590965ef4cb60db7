package enforce

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// snapshot is everything a decision reads except the counters: the enabled
// definitions, indexed the way gates are built, the memberships and the
// administrators. It is never modified once published: a reload builds a
// new one (copying only what changed) and swaps it in atomically, so a
// decision reads it without a lock and without a database round trip.
type snapshot struct {
	loadedAt time.Time

	// Index is the enabled definitions indexed the way gates are built
	// (pkg/enforce/plan), with the sentinels' switches.
	plan.Index
	// members: "<subject_type>:<subject>" -> membership, networks apart.
	members plan.Members
	// networks: the network memberships, for longest-prefix match.
	networks plan.Networks
	// admins: "<subject_type>:<subject>" of administrators.
	admins map[string]bool

	// enforcementOff is the master switch (rl_settings): every call is
	// allowed and nothing is counted.
	enforcementOff bool

	// views: the views calls were decided from on this snapshot
	// (viewcache.go); a new snapshot starts an empty cache. Nil: nothing
	// is cached.
	views *viewCache

	// defs: every definition by id, disabled ones and the sentinels too:
	// what an incremental reload patches before rebuilding the indexes.
	defs map[string]ratelimit.Definition
}

func memberOf(m ratelimit.Membership) plan.Member {
	mem := plan.Member{Groups: m.Groups}
	mem.Quarantined = m.HasGroup(ratelimit.GroupQuarantineCallers) || m.HasGroup(ratelimit.GroupQuarantineTargets)
	if m.QuarantineExpiresAt != nil {
		mem.QuarantineExpireAt = *m.QuarantineExpiresAt
	}
	mem.Lockout = mem.Quarantined && isLockout(m)
	return mem
}

// memberID is a membership's id, from its subject when the source left it
// out.
func memberID(m ratelimit.Membership) string {
	if m.ID != "" {
		return m.ID
	}
	return m.Key()
}

// rowsRead counts the rows one load read from the store, by table.
type rowsRead struct {
	definitions, memberships, admins int
}

// tableChanges is what notifications said about one table since the last
// reload: every row (all), or the ids of the rows that changed.
type tableChanges struct {
	all bool
	ids map[string]struct{}
}

// maxPendingIDs bounds the ids remembered per table; past it the table is
// reloaded whole, which costs no more than reading that many rows by id.
const maxPendingIDs = 10_000

func (c *tableChanges) add(ch Change) {
	if c.all {
		return
	}
	if ch.All || len(c.ids)+len(ch.IDs) > maxPendingIDs {
		c.all, c.ids = true, nil
		return
	}
	if c.ids == nil {
		c.ids = make(map[string]struct{}, len(ch.IDs))
	}
	for _, id := range ch.IDs {
		c.ids[id] = struct{}{}
	}
}

func (c tableChanges) empty() bool { return !c.all && len(c.ids) == 0 }

func (c tableChanges) list() []string { return slices.Sorted(maps.Keys(c.ids)) }

// changes is what a reload must read: everything (all), or per table.
type changes struct {
	all                  bool
	defs, members, admin tableChanges
	// settings: the master switch changed. Every load reads it (one row),
	// so it only has to make the reload happen.
	settings bool
}

func (c *changes) add(ch Change) {
	switch ch.Table {
	case TableDefinitions:
		c.defs.add(ch)
	case TableMemberships:
		c.members.add(ch)
	case TableAdmins:
		c.admin.add(ch)
	case TableSettings:
		c.settings = true
	default:
		c.all = true
	}
}

func (c changes) empty() bool {
	return !c.all && !c.settings && c.defs.empty() && c.members.empty() && c.admin.empty()
}

// loadSnapshot reads definitions, memberships and admins whole, in one
// consistent read of the source, so the snapshot is consistent: an apply or
// a quarantine is either wholly in it or not at all.
func loadSnapshot(ctx context.Context, src Source, now time.Time) (*snapshot, rowsRead, error) {
	return loadChanges(ctx, src, nil, changes{all: true}, now)
}

// loadChanges returns prev with the rows ch names read again, in one
// consistent read of the source; a table ch marks whole is read whole
// (Source.LoadTables), and with ch.all (or no prev) everything is (Load).
// Maps that did not change are shared with prev, which stays valid for
// the decisions still reading it.
func loadChanges(ctx context.Context, src Source, prev *snapshot, ch changes, now time.Time) (*snapshot, rowsRead, error) {
	if prev == nil {
		ch.all = true
	}
	if ch.all {
		ch.defs.all, ch.members.all, ch.admin.all = true, true, true
	}
	var (
		n    rowsRead
		s    = &snapshot{}
		rows Rows
		err  error
	)
	if prev != nil {
		*s = *prev
	}
	s.loadedAt = now
	s.views = newViewCache() // prev's views may name what changed
	switch {
	case ch.all:
		var st State
		st, err = src.Load(ctx)
		rows = Rows(st)
	default:
		rows, err = src.LoadTables(ctx, TablesRequest{
			AllDefinitions: ch.defs.all, AllMemberships: ch.members.all, AllAdmins: ch.admin.all,
			Definitions: ch.defs.list(), Memberships: ch.members.list(), Admins: ch.admin.list()})
	}
	if err != nil {
		return nil, n, fmt.Errorf("load enforcement snapshot: %w", err)
	}
	if !ch.defs.empty() {
		var defs map[string]ratelimit.Definition
		if ch.defs.all {
			defs = make(map[string]ratelimit.Definition, len(rows.Definitions))
		} else {
			defs = maps.Clone(prev.defs)
			for id := range ch.defs.ids {
				delete(defs, id)
			}
		}
		for _, d := range rows.Definitions {
			if d.ID == "" {
				d.ID = d.Key()
			}
			defs[d.ID] = d
		}
		n.definitions = len(rows.Definitions)
		s.defs = defs
		s.Index = plan.NewIndex(s.defs)
	}
	if !ch.members.empty() {
		if ch.members.all {
			idx := plan.NewMembers()
			nets := map[netip.Prefix]*plan.Member{}
			for _, m := range rows.Memberships {
				mem := memberOf(m)
				if m.SubjectType == ratelimit.SubjectNetwork && !ipLockoutOnly(m) {
					if p, ok := plan.NetworkPrefix(m.Key()); ok {
						nets[p] = &mem
					}
					continue
				}
				idx.Put(memberID(m), mem)
			}
			s.members = idx
			s.networks = plan.NewNetworks().With(nets)
		} else {
			patch := make(map[string]*plan.Member, len(ch.members.ids))
			nets := map[netip.Prefix]*plan.Member{}
			for id := range ch.members.ids {
				// gone unless read
				if p, ok := plan.NetworkPrefix(id); ok {
					nets[p] = nil
					patch[id] = nil // or an anonymous caller's lockout
				} else if !plan.IsNetworkID(id) {
					patch[id] = nil
				}
			}
			for _, m := range rows.Memberships {
				mem := memberOf(m)
				if m.SubjectType == ratelimit.SubjectNetwork && !ipLockoutOnly(m) {
					if p, ok := plan.NetworkPrefix(m.Key()); ok {
						nets[p] = &mem
					}
					continue
				}
				patch[memberID(m)] = &mem
			}
			s.members = prev.members.With(patch)
			if len(nets) > 0 {
				s.networks = prev.networks.With(nets)
			}
		}
		n.memberships = len(rows.Memberships)
	}
	if !ch.admin.empty() {
		var set map[string]bool
		if ch.admin.all {
			set = make(map[string]bool, len(rows.Admins))
		} else {
			set = maps.Clone(prev.admins)
			for id := range ch.admin.ids {
				delete(set, id)
			}
		}
		for _, a := range rows.Admins {
			set[a.Key()] = true
		}
		n.admins = len(rows.Admins)
		s.admins = set
	}
	s.enforcementOff = rows.EnforcementOff
	return s, n, nil
}
