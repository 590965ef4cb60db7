package enforce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/clientip"
	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Plan is what a decision of a call would use, found without counting:
// Explain's answer. It is built by the code a decision is built by (the
// same view, gates and quarantine rule), so that what rlapi's status, the
// counters API's selectors or a simulation read from it is what a gateway
// enforces. The types live in pkg/enforce/plan.
type (
	Plan              = plan.Explanation
	PlanGroup         = plan.Group
	PlanStop          = plan.Stop
	PlannedDefinition = plan.Planned
)

// Reasons a Plan gives for a call that meets nothing (Plan.Skipped).
const (
	PlanSkippedNothing        = plan.SkippedNothing
	PlanSkippedNoRoute        = plan.SkippedNoRoute
	PlanSkippedExemptRoute    = plan.SkippedExemptRoute
	PlanSkippedEnforcementOff = plan.SkippedEnforcementOff
)

// ErrNoSnapshot: the Enforcer holds no usable snapshot of definitions and
// memberships (its source has not been read).
var ErrNoSnapshot = errors.New("enforce: no usable snapshot of definitions and memberships")

// Explain returns the plan a decision of c would use now: its gates, the
// definitions behind them and why each applies, and the quarantine that
// would refuse it, counting nothing. The definitions, and the memberships
// and administrators the call names (its user, client, team, target and
// client address), are read from the source first, so that a plan
// reflects every write made before it; a network membership found by the
// call's address is the snapshot's. A failed-credential lockout of the
// client address lives in the counters and is not part of a plan.
func (e *Enforcer) Explain(ctx context.Context, c Call) (Plan, error) {
	now := e.now()
	prev := e.snaps.Current()
	if prev == nil {
		return Plan{}, ErrNoSnapshot
	}
	snap, _, err := snapshots.Load(ctx, e.source, prev, explainRows(c, e.opts.IPv6Prefix), now, newViewCache)
	if err != nil {
		return Plan{}, fmt.Errorf("explain: %w", err)
	}
	return explain(snap, c, now, e.views, &e.stops), nil
}

// explainRows are the rows a plan of c reads fresh: every definition, and
// the memberships and administrators c names (its client address's
// network keyed by ipv6Prefix).
func explainRows(c Call, ipv6Prefix int) snapshots.Changes {
	var ch snapshots.Changes
	ch.Defs.All = true
	member := func(subjectType, subject string) {
		if subject != "" {
			ch.Members.Add(Change{Table: TableMemberships, IDs: []string{ratelimit.MembershipID(subjectType, subject)}})
		}
	}
	admin := func(subjectType, subject string) {
		if subject != "" {
			ch.Admins.Add(Change{Table: TableAdmins, IDs: []string{ratelimit.MembershipID(subjectType, subject)}})
		}
	}
	member(ratelimit.SubjectUser, c.Username)
	member(ratelimit.SubjectClient, c.ClientID)
	member(ratelimit.SubjectTeam, strings.TrimSpace(c.Team)) // as viewer.build keys it
	admin(ratelimit.SubjectUser, c.Username)
	admin(ratelimit.SubjectClient, c.ClientID)
	if name, known, err := ratelimit.NormalizeTargetName(c.TargetType, c.TargetName); known && err == nil && c.TargetType != "" {
		ch.Members.Add(Change{Table: TableMemberships, IDs: []string{targetSubject(c.TargetType, name)}})
	}
	if ip := clientAddr(c.ClientIP); ip.IsValid() {
		if n := clientip.Network(ip, ipv6Prefix); n.IsValid() {
			member(ratelimit.SubjectNetwork, n.String())
		}
	}
	return ch
}

// explain explains c on snap, following decide step by step, with the
// views and stops a decision uses.
func explain(snap *snapshot, c Call, now time.Time, views viewer, stops *stops) Plan {
	p := Plan{Groups: []PlanGroup{}, Gates: []Gate{}, Definitions: []PlannedDefinition{}}
	ip := clientAddr(c.ClientIP)
	anonymous := c.Username == "" && c.ClientID == ""
	log := &plan.Log{}
	team := strings.TrimSpace(c.Team)
	if c.Descriptors == nil && anonymous && !ip.IsValid() {
		if c.TargetType == "" && c.Path == "" && team == "" {
			p.Skipped = PlanSkippedNothing
			return p
		}
		p.AnyCaller, log.AnyCaller = true, true
		p.AnyTarget = c.TargetType == "" && c.Path == ""
	}
	var routes []plan.RouteMatch
	switch {
	case c.Path != "":
		var exempt bool
		method, path := strings.ToUpper(c.Method), RoutePath(c.Path)
		routes, exempt = snap.Routes.Match(method, path)
		if exempt {
			p.Skipped = PlanSkippedExemptRoute
			p.Definitions = plan.ExemptRoutes(snap.Routes, method, path)
			return p
		}
		if c.TargetType == "" && len(routes) == 0 {
			p.Skipped = PlanSkippedNoRoute
			return p
		}
	case c.TargetType == "" && c.Descriptors == nil && !p.AnyCaller:
		p.AnyTarget, log.AnyTarget = true, true
	}
	if snap.EnforcementOff {
		p.Skipped = PlanSkippedEnforcementOff
		return p
	}
	v := views.build(snap, c, ip, anonymous, routes, now, log)
	p.Admin = v.admin
	for _, g := range log.Groups {
		p.Groups = append(p.Groups, PlanGroup(g))
	}
	if p.AnyCaller && team != "" {
		// Any caller of a team: the team's groups, the definitions
		// naming the team and those for everyone apply to each of them,
		// on buckets kept per caller (listed without a counter).
		teamKey := ratelimit.MembershipID(ratelimit.SubjectTeam, team)
		for _, g := range plan.CallerGroups(snap.Members, teamKey) {
			p.Groups = append(p.Groups, PlanGroup(g))
			for _, d := range snap.GroupDefs[g.Name] {
				if !d.Everyone {
					log.PerCaller = append(log.PerCaller, plan.Keyless{Def: d, Via: g.Via})
				}
			}
		}
		for _, d := range snap.SubjectDefs[teamKey] {
			log.PerCaller = append(log.PerCaller, plan.Keyless{Def: d, Via: teamKey})
		}
		for _, d := range snap.EveryoneDefs {
			log.PerCaller = append(log.PerCaller, plan.Keyless{Def: d, Via: MatchedEveryone})
		}
	}
	if s := stops.of(snap, v, c, anonymous, now); s.kind != stopNone {
		p.Stop = &PlanStop{Reason: ReasonQuarantined, Scope: "caller", SubjectType: s.subjectType, Until: s.m.QuarantineExpireAt}
		switch s.kind {
		case stopTarget:
			p.Stop.Scope = "target"
		case stopLockout:
			p.Stop.Reason, p.Stop.SubjectType = ReasonLockedOut, ""
		}
	}
	p.Gates = append(p.Gates, v.gatesAt(now)...)
	byKey := make(map[string]int, len(p.Gates))
	for i, g := range p.Gates {
		if _, seen := byKey[g.Key()]; !seen {
			byKey[g.Key()] = i
		}
		p.Definitions = append(p.Definitions, plan.PlannedOf(snap.Defs, g, i, ""))
	}
	for n, g := range log.Losers {
		i, ok := byKey[g.Key()]
		if !ok {
			continue
		}
		p.Definitions = append(p.Definitions, plan.LoserOf(snap.Defs, g, i, p.Gates[i], log.Overridden[n]))
	}
	for _, u := range log.PerCaller {
		p.Definitions = append(p.Definitions, PlannedDefinition{Definition: u.Def, MatchedBy: u.Via, Matched: u.Matched, Dimension: u.Dimension, Gate: -1})
	}
	if p.AnyCaller {
		// A route whose every limit is kept per caller has no gate.
		for _, m := range routes {
			if !slices.ContainsFunc(p.Definitions, func(pd PlannedDefinition) bool { return pd.Definition.ID == m.Def.ID }) {
				p.Definitions = append(p.Definitions, PlannedDefinition{Definition: *m.Def, Matched: m.Pattern, Gate: -1})
			}
		}
	}
	slices.SortStableFunc(p.Definitions, func(a, b PlannedDefinition) int {
		return cmp.Or(strings.Compare(a.Definition.ID, b.Definition.ID), strings.Compare(a.Dimension, b.Dimension))
	})
	return p
}
