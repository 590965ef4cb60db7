// Package snapshot keeps what an Enforcer decides from, apart from the
// counters: the definitions, memberships and administrators of its
// source, read whole at start and then patched row by row as the
// source's change notices name them (Reloader), and published as an
// immutable Snapshot a decision reads without a lock. It also remembers
// the escalation lockouts its own replica wrote until a reload reads them
// back (Recent). pkg/enforce is its only user.
package snapshot

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/enforce/source"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Snapshot is everything a decision reads except the counters: the enabled
// definitions, indexed the way gates are built, the memberships and the
// administrators. V is the type of the decisions' own cache of what they
// built from it (the core's view cache). It is never modified once published: a reload builds a
// new one (copying only what changed) and swaps it in atomically, so a
// decision reads it without a lock and without a database round trip.
type Snapshot[V any] struct {
	LoadedAt time.Time

	// Index is the enabled definitions indexed the way gates are built
	// (pkg/enforce/plan), with the sentinels' switches.
	plan.Index
	// Members: "<subject_type>:<subject>" -> membership, networks apart.
	Members plan.Members
	// Networks: the network memberships, for longest-prefix match.
	Networks plan.Networks
	// Admins: "<subject_type>:<subject>" of administrators.
	Admins map[string]bool

	// EnforcementOff is the master switch (rl_settings): every call is
	// allowed and nothing is counted.
	EnforcementOff bool

	// Views: what decisions cached from this snapshot; every snapshot
	// starts an empty one (a previous one's may name what changed). Nil:
	// nothing is cached.
	Views *V

	// Defs: every definition by id, disabled ones and the sentinels too:
	// what an incremental reload patches before rebuilding the indexes.
	Defs map[string]ratelimit.Definition
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

// RowsRead counts the rows one load read from the store, by table.
type RowsRead struct {
	Definitions, Memberships, Admins int
}

// TableChanges is what notifications said about one table since the last
// reload: every row (All), or the ids of the rows that changed.
type TableChanges struct {
	All bool
	ids map[string]struct{}
}

// maxPendingIDs bounds the ids remembered per table; past it the table is
// reloaded whole, which costs no more than reading that many rows by id.
const maxPendingIDs = 10_000

// Add notes the rows ch names (all of them when ch says All).
func (c *TableChanges) Add(ch source.Change) {
	if c.All {
		return
	}
	if ch.All || len(c.ids)+len(ch.IDs) > maxPendingIDs {
		c.All, c.ids = true, nil
		return
	}
	if c.ids == nil {
		c.ids = make(map[string]struct{}, len(ch.IDs))
	}
	for _, id := range ch.IDs {
		c.ids[id] = struct{}{}
	}
}

func (c TableChanges) empty() bool { return !c.All && len(c.ids) == 0 }

func (c TableChanges) list() []string { return slices.Sorted(maps.Keys(c.ids)) }

// Changes is what a reload must read: everything (All), or per table.
type Changes struct {
	All                   bool
	Defs, Members, Admins TableChanges
	// settings: the master switch changed. Every load reads it (one row),
	// so it only has to make the reload happen.
	settings bool
}

// Add notes the rows ch names.
func (c *Changes) Add(ch source.Change) {
	switch ch.Table {
	case source.TableDefinitions:
		c.Defs.Add(ch)
	case source.TableMemberships:
		c.Members.Add(ch)
	case source.TableAdmins:
		c.Admins.Add(ch)
	case source.TableSettings:
		c.settings = true
	default:
		c.All = true
	}
}

func (c Changes) empty() bool {
	return !c.All && !c.settings && c.Defs.empty() && c.Members.empty() && c.Admins.empty()
}

// Load returns prev with the rows ch names read again, in one
// consistent read of the source; a table ch marks whole is read whole
// (Source.LoadTables), and with ch.all (or no prev) everything is (Load).
// Maps that did not change are shared with prev, which stays valid for
// the decisions still reading it. newViews makes the new snapshot's empty
// cache (nil: none).
func Load[V any](ctx context.Context, src source.Source, prev *Snapshot[V], ch Changes, now time.Time, newViews func() *V) (*Snapshot[V], RowsRead, error) {
	if prev == nil {
		ch.All = true
	}
	if ch.All {
		ch.Defs.All, ch.Members.All, ch.Admins.All = true, true, true
	}
	var (
		n    RowsRead
		s    = &Snapshot[V]{}
		rows source.Rows
		err  error
	)
	if prev != nil {
		*s = *prev
	}
	s.LoadedAt = now
	s.Views = nil // prev's views may name what changed
	if newViews != nil {
		s.Views = newViews()
	}
	switch {
	case ch.All:
		var st source.State
		st, err = src.Load(ctx)
		rows = source.Rows(st)
	default:
		rows, err = src.LoadTables(ctx, source.TablesRequest{
			AllDefinitions: ch.Defs.All, AllMemberships: ch.Members.All, AllAdmins: ch.Admins.All,
			Definitions: ch.Defs.list(), Memberships: ch.Members.list(), Admins: ch.Admins.list()})
	}
	if err != nil {
		return nil, n, fmt.Errorf("load enforcement snapshot: %w", err)
	}
	if !ch.Defs.empty() {
		var defs map[string]ratelimit.Definition
		if ch.Defs.All {
			defs = make(map[string]ratelimit.Definition, len(rows.Definitions))
		} else {
			defs = maps.Clone(prev.Defs)
			for id := range ch.Defs.ids {
				delete(defs, id)
			}
		}
		for _, d := range rows.Definitions {
			if d.ID == "" {
				d.ID = d.Key()
			}
			defs[d.ID] = d
		}
		n.Definitions = len(rows.Definitions)
		s.Defs = defs
		s.Index = plan.NewIndex(s.Defs)
	}
	if !ch.Members.empty() {
		if ch.Members.All {
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
			s.Members = idx
			s.Networks = plan.NewNetworks().With(nets)
		} else {
			patch := make(map[string]*plan.Member, len(ch.Members.ids))
			nets := map[netip.Prefix]*plan.Member{}
			for id := range ch.Members.ids {
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
			s.Members = prev.Members.With(patch)
			if len(nets) > 0 {
				s.Networks = prev.Networks.With(nets)
			}
		}
		n.Memberships = len(rows.Memberships)
	}
	if !ch.Admins.empty() {
		var set map[string]bool
		if ch.Admins.All {
			set = make(map[string]bool, len(rows.Admins))
		} else {
			set = maps.Clone(prev.Admins)
			for id := range ch.Admins.ids {
				delete(set, id)
			}
		}
		for _, a := range rows.Admins {
			set[a.Key()] = true
		}
		n.Admins = len(rows.Admins)
		s.Admins = set
	}
	s.EnforcementOff = rows.EnforcementOff
	return s, n, nil
}

// isLockout reports whether m is an escalation lockout.
func isLockout(m ratelimit.Membership) bool {
	return m.QuarantineExpiresAt != nil && strings.HasPrefix(m.QuarantineReason, LockoutReasonPrefix)
}

// LockoutReasonPrefix starts the quarantine reason of every escalation
// lockout (enforce.LockoutReasonPrefix).
const LockoutReasonPrefix = "lockout: "

// ipLockoutOnly reports whether m is a network membership holding nothing
// but an escalation lockout (an anonymous caller's, expired or not): the
// snapshot keeps it with the other memberships, by id, not among the
// networks.
func ipLockoutOnly(m ratelimit.Membership) bool {
	return m.SubjectType == ratelimit.SubjectNetwork && isLockout(m) &&
		len(m.Groups) == 1 && m.Groups[0] == ratelimit.GroupQuarantineCallers
}
