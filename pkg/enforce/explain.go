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
// enforces.
type Plan struct {
	// Skipped says why no limit and no quarantine applies to the call at
	// all (PlanSkipped*); empty when the call meets its gates.
	Skipped string `json:"skipped,omitempty"`
	// AnyTarget: the call named no target, path or descriptor, and is
	// explained as its caller on any target. (A decision of such a call
	// is a control-plane call and meets nothing.) Its caller_target
	// definitions are listed with no key, since their counters are per
	// target.
	AnyTarget bool `json:"any_target,omitempty"`
	// AnyCaller: the call named no identity and no client address, and is
	// explained as any caller of its target or path (of its team, when it
	// names one: the team's groups and the definitions for everyone are
	// then listed without a counter, their buckets being per caller). (A decision of such
	// a call has no one to limit and meets nothing.) The limits every
	// caller shares are its gates; the definitions kept per caller (tool
	// scopes principal and principal_tool, a route's per-caller
	// dimensions) are listed with no key.
	AnyCaller bool `json:"any_caller,omitempty"`
	// Admin: the caller is an administrator, whom no caller limit or
	// caller quarantine applies to.
	Admin bool `json:"admin,omitempty"`
	// Groups are the groups the caller's limits come from, each with the
	// membership that put the caller in it.
	Groups []PlanGroup `json:"groups"`
	// Stop is the quarantine or escalation lockout that refuses the call
	// before any gate; nil when none does.
	Stop *PlanStop `json:"stop,omitempty"`
	// Gates are the gates a decision takes, in the order it takes them.
	// Nothing is read from the counters: Count, Remaining and RetryAfter
	// are zero, Reset is the end of the current window.
	Gates []Gate `json:"gates"`
	// Definitions are the definitions that apply to the call, each with
	// why and the counter it counts on: the ones behind the gates, those
	// a more restrictive definition outranked on the bucket they share,
	// and, without a counter (Gate -1), the caller_target ones of an
	// AnyTarget plan and those kept per client address or per team of a
	// call that names none (Dimension ip or team). Sorted by definition
	// id, then dimension.
	Definitions []PlannedDefinition `json:"definitions"`
}

// Reasons a Plan gives for a call that meets nothing (Plan.Skipped).
const (
	// PlanSkippedNothing: the call names no caller, target, path or
	// descriptor: there is nothing to explain.
	PlanSkippedNothing = "nothing"
	// PlanSkippedNoRoute: a call with a path but no target that no route
	// definition matches.
	PlanSkippedNoRoute = "no-route"
	// PlanSkippedExemptRoute: an exempt route definition matched the
	// call's path (Plan.Definitions lists it).
	PlanSkippedExemptRoute = "exempt-route"
	// PlanSkippedEnforcementOff: the master switch is off.
	PlanSkippedEnforcementOff = "enforcement-off"
)

// PlanGroup is one group of the caller and why the caller is in it.
type PlanGroup struct {
	Name string `json:"name"`
	// Via is the membership that put the caller in the group (user:alice,
	// client:bot, team:acme, network:10.0.0.0/8).
	Via string `json:"via"`
}

// PlanStop is a quarantine or escalation lockout that refuses a call
// before its gates.
type PlanStop struct {
	// Reason is ReasonQuarantined or ReasonLockedOut.
	Reason string `json:"reason"`
	// Scope is "target" or "caller".
	Scope string `json:"scope"`
	// SubjectType is the subject whose membership holds it: the target's
	// type for a target quarantine, user, client, team or network for a
	// caller's; empty for a lockout.
	SubjectType string `json:"subject_type,omitempty"`
	// Until is when it ends (zero: when an operator lifts it).
	Until time.Time `json:"until,omitzero"`
}

// PlannedDefinition is one definition that applies to a call.
type PlannedDefinition struct {
	Definition ratelimit.Definition `json:"definition"`
	// MatchedBy is why a caller or caller_target definition applies (as
	// Gate.MatchedBy); Matched the route pattern or tool glob that matched
	// and Dimension what the bucket is kept per (as Gate.Matched and
	// Gate.Dimension).
	MatchedBy string `json:"matched_by,omitempty"`
	Matched   string `json:"matched,omitempty"`
	Dimension string `json:"dimension,omitempty"`
	// Key is the counter it counts on; empty for a caller_target
	// definition of a plan without a target.
	Key string `json:"key,omitempty"`
	// Gate is the index in Plan.Gates of the gate that decides its
	// counter, -1 when none does (no key, or an exempt route).
	Gate int `json:"gate"`
	// OutrankedBy names the more restrictive definition whose limit the
	// bucket this one shares is kept at (the lowest limit of one axis,
	// window and algorithm wins); empty when its own limit applies.
	OutrankedBy string `json:"outranked_by,omitempty"`
}

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
	snap, _, err := snapshots.Load(ctx, e.source, prev, e.explainRows(c), now, newViewCache)
	if err != nil {
		return Plan{}, fmt.Errorf("explain: %w", err)
	}
	return e.plan(snap, c, now), nil
}

// explainRows are the rows a plan of c reads fresh: every definition, and
// the memberships and administrators c names.
func (e *Enforcer) explainRows(c Call) snapshots.Changes {
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
	member(ratelimit.SubjectTeam, strings.TrimSpace(c.Team)) // as buildView keys it
	admin(ratelimit.SubjectUser, c.Username)
	admin(ratelimit.SubjectClient, c.ClientID)
	if name, known, err := ratelimit.NormalizeTargetName(c.TargetType, c.TargetName); known && err == nil && c.TargetType != "" {
		ch.Members.Add(Change{Table: TableMemberships, IDs: []string{targetSubject(c.TargetType, name)}})
	}
	if ip := clientAddr(c.ClientIP); ip.IsValid() {
		if n := clientip.Network(ip, e.opts.IPv6Prefix); n.IsValid() {
			member(ratelimit.SubjectNetwork, n.String())
		}
	}
	return ch
}

// plan explains c on snap, following decide step by step.
func (e *Enforcer) plan(snap *snapshot, c Call, now time.Time) Plan {
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
			p.Definitions = exemptRoutes(snap, method, path)
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
	v := e.buildView(snap, c, ip, anonymous, routes, now, log)
	p.Admin = v.admin
	for _, g := range log.Groups {
		p.Groups = append(p.Groups, PlanGroup{Name: g.Name, Via: g.Via})
	}
	if p.AnyCaller && team != "" {
		// Any caller of a team: the team's groups, and the definitions
		// for everyone, apply to each of them, on buckets kept per
		// caller (listed without a counter).
		for _, g := range plan.CallerGroups(snap.Members, ratelimit.MembershipID(ratelimit.SubjectTeam, team)) {
			p.Groups = append(p.Groups, PlanGroup{Name: g.Name, Via: g.Via})
			for _, d := range snap.GroupDefs[g.Name] {
				if !d.Everyone {
					log.PerCaller = append(log.PerCaller, plan.Keyless{Def: d, Via: g.Via})
				}
			}
		}
		for _, d := range snap.EveryoneDefs {
			log.PerCaller = append(log.PerCaller, plan.Keyless{Def: d, Via: MatchedEveryone})
		}
	}
	if s := e.stopOf(snap, v, c, anonymous, now); s.kind != stopNone {
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
		p.Definitions = append(p.Definitions, plannedOf(snap, g, i, ""))
	}
	for _, g := range log.Losers {
		i, ok := byKey[g.Key()]
		if !ok {
			continue
		}
		p.Definitions = append(p.Definitions, plannedOf(snap, g, i, p.Gates[i].DefinitionID))
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

// plannedOf is the planned definition behind gate g (index i of the
// plan's gates), outranked by the definition named, if any.
func plannedOf(snap *snapshot, g Gate, i int, outrankedBy string) PlannedDefinition {
	d, ok := snap.Defs[g.DefinitionID]
	if !ok {
		// A descriptor's own limit (an Envoy request's override) is named
		// by its counter, not by a stored definition.
		d = ratelimit.Definition{ID: g.DefinitionID, Axis: g.Axis, EntityType: g.EntityType, WindowSeconds: g.WindowSeconds}
	}
	return PlannedDefinition{Definition: d, MatchedBy: g.MatchedBy, Matched: g.Matched, Dimension: g.Dimension,
		Key: g.Key(), Gate: i, OutrankedBy: outrankedBy}
}

// exemptRoutes are the exempt route definitions matching a call's method
// and path, each with the first of its patterns that matched.
func exemptRoutes(snap *snapshot, method, path string) []PlannedDefinition {
	out := []PlannedDefinition{}
	for _, m := range snap.Routes.Exempt(method, path) {
		out = append(out, PlannedDefinition{Definition: *m.Def, Matched: m.Pattern, Gate: -1})
	}
	return out
}
