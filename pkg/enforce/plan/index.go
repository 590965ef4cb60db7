// Package plan is which limits apply to a call: the enabled definitions
// and the memberships indexed the way gates are built (group definitions,
// targets, server groups, tool globs, route patterns, Envoy descriptor
// trees, memberships and networks for longest-prefix match), and the
// gates built from them, each with its counter key and the reason it
// applies. The core (pkg/enforce) fills an Index and the membership
// indexes on every snapshot load, builds a call's gates here once per
// view (its view cache keeps them), and takes them through the counter
// store; Explain reads the same plan with a Log. A new kind of limit is a
// change here (and its key in pkg/enforce/counterkey), not in the core.
// The package imports no pkg/enforce: the core sits above it.
package plan

import (
	"maps"
	"slices"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Index is the enabled definitions of a snapshot, indexed the way gates
// are built. It is never modified once built.
type Index struct {
	// GroupDefs: group name -> enabled caller and caller_target definitions.
	GroupDefs map[string][]ratelimit.Definition
	// SubjectDefs: membership id of a user, client or team (user:alice)
	// -> the enabled caller and caller_target definitions naming it
	// (ratelimit.IsSubjectEntity).
	SubjectDefs map[string][]ratelimit.Definition
	// TargetDefs: "<entity_type>:<name>" -> enabled target definitions.
	TargetDefs map[string][]ratelimit.Definition
	// EveryoneDefs: the enabled caller and caller_target definitions that
	// select every caller (Definition.Everyone), in id order; they are in
	// GroupDefs too, which Gates skips them in.
	EveryoneDefs []ratelimit.Definition
	// ServerGroups: Member server name -> enabled server_group definitions.
	ServerGroups map[string][]ratelimit.Definition
	// descriptors: domain -> the tree of its enabled descriptor
	// definitions (descriptor.go).
	descriptors map[string]*descNode
	// Routes: the enabled route definitions by path pattern.
	Routes *RouteIndex
	// tools: the enabled mcp_tool and a2a_skill definitions by entity
	// type, then by name (exact or glob).
	tools map[string]*patternIndex[*ratelimit.Definition]
	// CallersOn and TargetsOn are the sentinels' switches of the
	// operators' caller and target quarantines.
	CallersOn, TargetsOn bool
}

// NewIndex builds the decision indexes from every definition by id
// (disabled ones and the sentinels included), in id order as a full load
// always did.
func NewIndex(defs map[string]ratelimit.Definition) Index {
	var s Index
	s.GroupDefs = map[string][]ratelimit.Definition{}
	s.SubjectDefs = map[string][]ratelimit.Definition{}
	s.TargetDefs = map[string][]ratelimit.Definition{}
	s.ServerGroups = map[string][]ratelimit.Definition{}
	s.EveryoneDefs = nil
	s.descriptors = map[string]*descNode{}
	s.Routes = &RouteIndex{}
	s.tools = map[string]*patternIndex[*ratelimit.Definition]{
		ratelimit.EntityMCPTool: {}, ratelimit.EntityA2ASkill: {}}
	s.CallersOn, s.TargetsOn = false, false
	for _, id := range slices.Sorted(maps.Keys(defs)) {
		d := defs[id]
		switch {
		case d.ID == ratelimit.SentinelCallers:
			s.CallersOn = d.Enabled
		case d.ID == ratelimit.SentinelTargets:
			s.TargetsOn = d.Enabled
		case !d.Enabled:
		case (d.Axis == ratelimit.AxisCaller || d.Axis == ratelimit.AxisCallerTarget) && ratelimit.IsSubjectEntity(d.EntityType):
			k := ratelimit.MembershipID(d.EntityType, d.Name)
			s.SubjectDefs[k] = append(s.SubjectDefs[k], d)
		case d.Axis == ratelimit.AxisCaller || d.Axis == ratelimit.AxisCallerTarget:
			s.GroupDefs[d.Name] = append(s.GroupDefs[d.Name], d)
			if d.Everyone {
				s.EveryoneDefs = append(s.EveryoneDefs, d)
			}
		case d.EntityType == ratelimit.EntityDescriptor:
			addDescriptor(s.descriptors, d)
		case d.EntityType == ratelimit.EntityRoute:
			s.Routes.add(&d)
		case d.Axis == ratelimit.AxisTarget && (d.EntityType == ratelimit.EntityMCPTool || d.EntityType == ratelimit.EntityA2ASkill):
			s.tools[d.EntityType].add(d.Name, &d)
		case d.EntityType == ratelimit.EntityServerGroup:
			for _, m := range d.Members {
				s.ServerGroups[m] = append(s.ServerGroups[m], d)
			}
		case d.Axis == ratelimit.AxisTarget:
			k := targetKey(d.EntityType, d.Name)
			s.TargetDefs[k] = append(s.TargetDefs[k], d)
		}
	}
	return s
}

// KnownDomain reports whether the index has descriptor definitions of
// domain (enabled ones).
func (x *Index) KnownDomain(domain string) bool { return x.descriptors[domain] != nil }
