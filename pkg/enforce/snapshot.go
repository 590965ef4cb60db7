package enforce

import (
	"context"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// snapshot is everything a decision reads except the counters: the enabled
// definitions, indexed the way gates are built, the memberships and the
// administrators. It is loaded whole and replaced whole (atomically), so a
// decision reads it without a lock and without a database round trip.
type snapshot struct {
	loadedAt time.Time

	// groupDefs: group name -> enabled caller and caller_target definitions.
	groupDefs map[string][]ratelimit.Definition
	// targetDefs: "<entity_type>:<name>" -> enabled target definitions.
	targetDefs map[string][]ratelimit.Definition
	// serverGroups: member server name -> enabled server_group definitions.
	serverGroups map[string][]ratelimit.Definition

	// members: "<subject_type>:<subject>" -> membership.
	members map[string]member
	// admins: "<subject_type>:<subject>" of administrators.
	admins map[string]bool

	callersOn, targetsOn bool
	// enforcementOff is the master switch (rl_settings): every call is
	// allowed and nothing is counted.
	enforcementOff bool
}

type member struct {
	groups             []string
	quarantined        bool
	quarantineExpireAt time.Time // zero: no expiry
}

// quarantinedAt reports whether the subject's quarantine applies at now.
func (m member) quarantinedAt(now time.Time) bool {
	return m.quarantined && (m.quarantineExpireAt.IsZero() || now.Before(m.quarantineExpireAt))
}

func targetKey(entityType, name string) string { return entityType + ":" + name }

// loadSnapshot reads definitions, memberships and admins in one
// repeatable-read transaction, so the snapshot is consistent: an apply or
// a quarantine is either wholly in it or not at all. It reads the tables
// in the order an apply locks them (definitions, memberships, admins).
func loadSnapshot(ctx context.Context, st *store.Store, now time.Time) (*snapshot, error) {
	s := &snapshot{
		loadedAt:     now,
		groupDefs:    map[string][]ratelimit.Definition{},
		targetDefs:   map[string][]ratelimit.Definition{},
		serverGroups: map[string][]ratelimit.Definition{},
		members:      map[string]member{},
		admins:       map[string]bool{},
	}
	err := st.ReadTx(ctx, func(q *store.Queries) error {
		err := q.EachDefinition(ctx, store.DefinitionFilter{}, func(d ratelimit.Definition) error {
			switch {
			case d.ID == ratelimit.SentinelCallers:
				s.callersOn = d.Enabled
			case d.ID == ratelimit.SentinelTargets:
				s.targetsOn = d.Enabled
			case !d.Enabled:
			case d.Axis == ratelimit.AxisCaller || d.Axis == ratelimit.AxisCallerTarget:
				s.groupDefs[d.Name] = append(s.groupDefs[d.Name], d)
			case d.EntityType == ratelimit.EntityServerGroup:
				for _, m := range d.Members {
					s.serverGroups[m] = append(s.serverGroups[m], d)
				}
			case d.Axis == ratelimit.AxisTarget:
				k := targetKey(d.EntityType, d.Name)
				s.targetDefs[k] = append(s.targetDefs[k], d)
			}
			return nil
		})
		if err != nil {
			return err
		}
		err = q.EachMembership(ctx, store.MembershipFilter{}, func(m ratelimit.Membership) error {
			mem := member{groups: m.Groups}
			mem.quarantined = m.HasGroup(ratelimit.GroupQuarantineCallers) || m.HasGroup(ratelimit.GroupQuarantineTargets)
			if m.QuarantineExpiresAt != nil {
				mem.quarantineExpireAt = *m.QuarantineExpiresAt
			}
			s.members[m.ID] = mem
			return nil
		})
		if err != nil {
			return err
		}
		admins, err := q.ListAdmins(ctx)
		if err != nil {
			return err
		}
		for _, a := range admins {
			s.admins[a.Key()] = true
		}
		on, err := q.EnforcementEnabled(ctx)
		s.enforcementOff = !on
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("load enforcement snapshot: %w", err)
	}
	return s, nil
}
