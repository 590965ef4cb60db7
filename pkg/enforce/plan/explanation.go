package plan

import (
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Explanation is what a decision of a call would use, found without
// counting: enforce.Enforcer.Explain's answer (enforce.Plan). The core
// builds it with the code a decision is built by (the same view, gates
// and quarantine rule), so that what rlapi's status, the counters API's
// selectors or a simulation read from it is what a gateway enforces.
type Explanation struct {
	// Skipped says why no limit and no quarantine applies to the call at
	// all (Skipped*); empty when the call meets its gates.
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
	Groups []Group `json:"groups"`
	// Stop is the quarantine or escalation lockout that refuses the call
	// before any gate; nil when none does.
	Stop *Stop `json:"stop,omitempty"`
	// Gates are the gates a decision takes, in the order it takes them.
	// Nothing is read from the counters: Count, Remaining and RetryAfter
	// are zero, Reset is the end of the current window.
	Gates []Gate `json:"gates"`
	// Definitions are the definitions that apply to the call, each with
	// why and the counter it counts on: the ones behind the gates, those
	// a more restrictive definition outranked or an override overrode on
	// the bucket they share,
	// and, without a counter (Gate -1), the caller_target ones of an
	// AnyTarget plan and those kept per client address or per team of a
	// call that names none (Dimension ip or team). Sorted by definition
	// id, then dimension.
	Definitions []Planned `json:"definitions"`
}

// Reasons an Explanation gives for a call that meets nothing
// (Explanation.Skipped).
const (
	// SkippedNothing: the call names no caller, target, path or
	// descriptor: there is nothing to explain.
	SkippedNothing = "nothing"
	// SkippedNoRoute: a call with a path but no target that no route
	// definition matches.
	SkippedNoRoute = "no-route"
	// SkippedExemptRoute: an exempt route definition matched the
	// call's path (Plan.Definitions lists it).
	SkippedExemptRoute = "exempt-route"
	// SkippedEnforcementOff: the master switch is off.
	SkippedEnforcementOff = "enforcement-off"
)

// Group is one group of the caller and why the caller is in it.
type Group struct {
	Name string `json:"name"`
	// Via is the membership that put the caller in the group (user:alice,
	// client:bot, team:acme, network:10.0.0.0/8).
	Via string `json:"via"`
}

// Stop is a quarantine or escalation lockout that refuses a call
// before its gates.
type Stop struct {
	// Reason is the decision's reason: quarantined or locked-out
	// (enforce.ReasonQuarantined, enforce.ReasonLockedOut).
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

// Planned is one definition that applies to a call.
type Planned struct {
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
	// Gate is the index in Explanation.Gates of the gate that decides its
	// counter, -1 when none does (no key, or an exempt route).
	Gate int `json:"gate"`
	// OutrankedBy names the more restrictive definition whose limit the
	// bucket this one shares is kept at (the lowest limit of one axis,
	// window and algorithm wins); empty when its own limit applies.
	OutrankedBy string `json:"outranked_by,omitempty"`
	// OverriddenBy names the override whose limit the bucket this one
	// shares is kept at instead of this one's (a more specific
	// definition, ratelimit.Definition.Override, raising or lowering it);
	// empty when its own limit applies or a more restrictive one outranked
	// it.
	OverriddenBy string `json:"overridden_by,omitempty"`
	// Overrides names, on the definition whose limit applies, the less
	// specific definitions it overrode (as Gate.Overrides).
	Overrides []string `json:"overrides,omitempty"`
}

// PlannedOf is the planned definition behind gate g (index i of the
// explanation's gates), outranked by the definition named, if any.
// defs are every definition by id.
func PlannedOf(defs map[string]ratelimit.Definition, g Gate, i int, outrankedBy string) Planned {
	d, ok := defs[g.DefinitionID]
	if !ok {
		// A descriptor's own limit (an Envoy request's override) is named
		// by its counter, not by a stored definition.
		d = ratelimit.Definition{ID: g.DefinitionID, Axis: g.Axis, EntityType: g.EntityType, WindowSeconds: g.WindowSeconds}
	}
	p := Planned{Definition: d, MatchedBy: g.MatchedBy, Matched: g.Matched, Dimension: g.Dimension,
		Key: g.Key(), Gate: i, OutrankedBy: outrankedBy}
	if outrankedBy == "" {
		p.Overrides = g.Overrides
	}
	return p
}

// LoserOf is the planned definition behind gate g, which lost its bucket
// to winner (index i of the explanation's gates): overridden when the
// log says an override replaced it, else outranked by a more
// restrictive definition.
func LoserOf(defs map[string]ratelimit.Definition, g Gate, i int, winner Gate, overridden bool) Planned {
	if overridden {
		p := PlannedOf(defs, g, i, "")
		p.Overrides, p.OverriddenBy = nil, winner.DefinitionID
		return p
	}
	return PlannedOf(defs, g, i, winner.DefinitionID)
}

// ExemptRoutes are the exempt route definitions matching a call's method
// and path, each with the first of its patterns that matched.
func ExemptRoutes(routes *RouteIndex, method, path string) []Planned {
	out := []Planned{}
	for _, m := range routes.Exempt(method, path) {
		out = append(out, Planned{Definition: *m.Def, Matched: m.Pattern, Gate: -1})
	}
	return out
}
