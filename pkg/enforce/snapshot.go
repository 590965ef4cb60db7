package enforce

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// snapshot is everything a decision reads except the counters: the enabled
// definitions, indexed the way gates are built, the memberships and the
// administrators. It is never modified once published: a reload builds a
// new one (copying only what changed) and swaps it in atomically, so a
// decision reads it without a lock and without a database round trip.
type snapshot struct {
	loadedAt time.Time

	// groupDefs: group name -> enabled caller and caller_target definitions.
	groupDefs map[string][]ratelimit.Definition
	// targetDefs: "<entity_type>:<name>" -> enabled target definitions.
	targetDefs map[string][]ratelimit.Definition
	// everyoneDefs: the enabled caller and caller_target definitions that
	// select every caller (Definition.Everyone), in id order; they are in
	// groupDefs too, which buildGates skips them in.
	everyoneDefs []ratelimit.Definition
	// serverGroups: member server name -> enabled server_group definitions.
	serverGroups map[string][]ratelimit.Definition
	// descriptors: domain -> the tree of its enabled descriptor
	// definitions (descriptor.go).
	descriptors map[string]*descNode
	// routes: the enabled route definitions by path pattern.
	routes *routeIndex
	// tools: the enabled mcp_tool and a2a_skill definitions by entity
	// type, then by name (exact or glob).
	tools map[string]*patternIndex[*ratelimit.Definition]

	// members: "<subject_type>:<subject>" -> membership, networks apart.
	members memberIndex
	// networks: the network memberships, for longest-prefix match.
	networks networkIndex
	// admins: "<subject_type>:<subject>" of administrators.
	admins map[string]bool

	callersOn, targetsOn bool
	// enforcementOff is the master switch (rl_settings): every call is
	// allowed and nothing is counted.
	enforcementOff bool

	// views: the views calls were decided from on this snapshot
	// (gatecache.go); a new snapshot starts an empty cache. Nil: nothing
	// is cached.
	views *viewCache

	// defs: every definition by id, disabled ones and the sentinels too:
	// what an incremental reload patches before rebuilding the indexes.
	defs map[string]ratelimit.Definition
}

type member struct {
	groups             []string
	quarantined        bool
	quarantineExpireAt time.Time // zero: no expiry
	// lockout: the quarantine is an escalation lockout (lockout.go).
	lockout bool
}

// quarantinedAt reports whether the subject's quarantine applies at now.
func (m member) quarantinedAt(now time.Time) bool {
	return m.quarantined && (m.quarantineExpireAt.IsZero() || now.Before(m.quarantineExpireAt))
}

func memberOf(m ratelimit.Membership) member {
	mem := member{groups: m.Groups}
	mem.quarantined = m.HasGroup(ratelimit.GroupQuarantineCallers) || m.HasGroup(ratelimit.GroupQuarantineTargets)
	if m.QuarantineExpiresAt != nil {
		mem.quarantineExpireAt = *m.QuarantineExpiresAt
	}
	mem.lockout = mem.quarantined && isLockout(m)
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

func targetKey(entityType, name string) string { return entityType + ":" + name }

// memberShards splits the memberships so a change copies one shard, about
// 1/256 of them (400 at 100,000 memberships), instead of the whole map:
// cloning a 100,000-entry map costs about 30 ms and 10 MB on the
// development machine, a shard about 0.1 ms.
const memberShards = 256

// memberIndex is the memberships by id, sharded by a hash of the id. The
// shards of a published index are never written: with copies the shards a
// change touches and shares the rest.
type memberIndex struct {
	seed   maphash.Seed
	shards *[memberShards]map[string]member
}

func newMemberIndex() memberIndex {
	return memberIndex{seed: maphash.MakeSeed(), shards: new([memberShards]map[string]member)}
}

func (x memberIndex) shard(id string) int { return int(maphash.String(x.seed, id) % memberShards) }

// get returns the membership of id (the zero member when there is none).
func (x memberIndex) get(id string) (member, bool) {
	if x.shards == nil {
		return member{}, false
	}
	m, ok := x.shards[x.shard(id)][id]
	return m, ok
}

// len counts the memberships.
func (x memberIndex) len() int {
	n := 0
	if x.shards != nil {
		for _, s := range x.shards {
			n += len(s)
		}
	}
	return n
}

// put adds a membership while the index is being built (before it is
// published).
func (x memberIndex) put(id string, m member) {
	i := x.shard(id)
	if x.shards[i] == nil {
		x.shards[i] = map[string]member{}
	}
	x.shards[i][id] = m
}

// with returns a new index: x with changes applied (a nil member deletes),
// copying only the shards they touch.
func (x memberIndex) with(changes map[string]*member) memberIndex {
	shards := *x.shards
	var copied [memberShards]bool
	for id, m := range changes {
		i := x.shard(id)
		if !copied[i] {
			shards[i] = maps.Clone(shards[i])
			if shards[i] == nil {
				shards[i] = map[string]member{}
			}
			copied[i] = true
		}
		if m == nil {
			delete(shards[i], id)
		} else {
			shards[i][id] = *m
		}
	}
	return memberIndex{seed: x.seed, shards: &shards}
}

// indexDefinitions (re)builds the decision indexes from s.defs, in id
// order as a full load always did.
func (s *snapshot) indexDefinitions() {
	s.groupDefs = map[string][]ratelimit.Definition{}
	s.targetDefs = map[string][]ratelimit.Definition{}
	s.serverGroups = map[string][]ratelimit.Definition{}
	s.everyoneDefs = nil
	s.descriptors = map[string]*descNode{}
	s.routes = &routeIndex{}
	s.tools = map[string]*patternIndex[*ratelimit.Definition]{
		ratelimit.EntityMCPTool: {}, ratelimit.EntityA2ASkill: {}}
	s.callersOn, s.targetsOn = false, false
	for _, id := range slices.Sorted(maps.Keys(s.defs)) {
		d := s.defs[id]
		switch {
		case d.ID == ratelimit.SentinelCallers:
			s.callersOn = d.Enabled
		case d.ID == ratelimit.SentinelTargets:
			s.targetsOn = d.Enabled
		case !d.Enabled:
		case d.Axis == ratelimit.AxisCaller || d.Axis == ratelimit.AxisCallerTarget:
			s.groupDefs[d.Name] = append(s.groupDefs[d.Name], d)
			if d.Everyone {
				s.everyoneDefs = append(s.everyoneDefs, d)
			}
		case d.EntityType == ratelimit.EntityDescriptor:
			addDescriptor(s.descriptors, d)
		case d.EntityType == ratelimit.EntityRoute:
			s.routes.add(&d)
		case d.Axis == ratelimit.AxisTarget && (d.EntityType == ratelimit.EntityMCPTool || d.EntityType == ratelimit.EntityA2ASkill):
			s.tools[d.EntityType].add(d.Name, &d)
		case d.EntityType == ratelimit.EntityServerGroup:
			for _, m := range d.Members {
				s.serverGroups[m] = append(s.serverGroups[m], d)
			}
		case d.Axis == ratelimit.AxisTarget:
			k := targetKey(d.EntityType, d.Name)
			s.targetDefs[k] = append(s.targetDefs[k], d)
		}
	}
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
		s.indexDefinitions()
	}
	if !ch.members.empty() {
		if ch.members.all {
			idx := newMemberIndex()
			nets := map[netip.Prefix]*member{}
			for _, m := range rows.Memberships {
				mem := memberOf(m)
				if m.SubjectType == ratelimit.SubjectNetwork && !ipLockoutOnly(m) {
					if p, ok := networkPrefix(m.Key()); ok {
						nets[p] = &mem
					}
					continue
				}
				idx.put(memberID(m), mem)
			}
			s.members = idx
			s.networks = newNetworkIndex().with(nets)
		} else {
			patch := make(map[string]*member, len(ch.members.ids))
			nets := map[netip.Prefix]*member{}
			for id := range ch.members.ids {
				// gone unless read
				if p, ok := networkPrefix(id); ok {
					nets[p] = nil
					patch[id] = nil // or an anonymous caller's lockout
				} else if !isNetworkID(id) {
					patch[id] = nil
				}
			}
			for _, m := range rows.Memberships {
				mem := memberOf(m)
				if m.SubjectType == ratelimit.SubjectNetwork && !ipLockoutOnly(m) {
					if p, ok := networkPrefix(m.Key()); ok {
						nets[p] = &mem
					}
					continue
				}
				patch[memberID(m)] = &mem
			}
			s.members = prev.members.with(patch)
			if len(nets) > 0 {
				s.networks = prev.networks.with(nets)
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
