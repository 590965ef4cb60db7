package plan

import (
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// patternIndex finds the values whose pattern matches a name, at a cost
// that does not grow with the patterns that cannot match it: exact
// patterns sit in a map, globs are bucketed by their literal prefix (what
// comes before the first '*'), and a lookup visits only the buckets whose
// prefix the name starts with, one map probe per distinct prefix length no
// longer than the name. A glob with no literal prefix (a leading '*') is
// tried on every lookup.
type patternIndex[T any] struct {
	exact map[string][]T
	globs map[string][]globEntry[T]
	// lens are the distinct lengths of the globs' prefixes, ascending.
	lens []int
	n    int
}

type globEntry[T any] struct {
	pattern string
	v       T
}

func (x *patternIndex[T]) add(pattern string, v T) {
	x.n++
	i := strings.IndexByte(pattern, '*')
	if i < 0 {
		if x.exact == nil {
			x.exact = map[string][]T{}
		}
		x.exact[pattern] = append(x.exact[pattern], v)
		return
	}
	if x.globs == nil {
		x.globs = map[string][]globEntry[T]{}
	}
	prefix := pattern[:i]
	if _, ok := x.globs[prefix]; !ok {
		if j, found := slices.BinarySearch(x.lens, i); !found {
			x.lens = slices.Insert(x.lens, j, i)
		}
	}
	x.globs[prefix] = append(x.globs[prefix], globEntry[T]{pattern, v})
}

// match calls fn with every value whose pattern matches name, and the
// pattern.
func (x *patternIndex[T]) match(name string, fn func(pattern string, v T)) {
	if x.n == 0 {
		return
	}
	for _, v := range x.exact[name] {
		fn(name, v)
	}
	for _, l := range x.lens {
		if l > len(name) {
			break
		}
		for _, g := range x.globs[name[:l]] {
			if ratelimit.GlobMatch(g.pattern, name) {
				fn(g.pattern, g.v)
			}
		}
	}
}

// routeRule is one route definition as its patterns index it.
type routeRule struct {
	def     *ratelimit.Definition
	methods []string // empty: every method
}

// RouteIndex holds the enabled route definitions by pattern.
type RouteIndex struct {
	patterns patternIndex[routeRule]
}

func (x *RouteIndex) add(d *ratelimit.Definition) {
	r := routeRule{def: d, methods: d.Methods}
	for _, p := range d.Paths {
		x.patterns.add(p, r)
	}
}

// RouteMatch is a route definition a call's path matched, and the first
// of its patterns that did.
type RouteMatch struct {
	Def     *ratelimit.Definition
	Pattern string
}

// Match lists the route definitions a call matches (each once, in id
// order), or exempt: an exempt route matched, and the call is never
// limited.
func (x *RouteIndex) Match(method, path string) (matches []RouteMatch, exempt bool) {
	if x == nil || x.patterns.n == 0 || path == "" {
		return nil, false
	}
	x.patterns.match(path, func(pattern string, r routeRule) {
		if len(r.methods) > 0 && !slices.Contains(r.methods, method) {
			return
		}
		if r.def.Exempt {
			exempt = true
			return
		}
		for _, m := range matches {
			if m.Def == r.def {
				return
			}
		}
		matches = append(matches, RouteMatch{Def: r.def, Pattern: pattern})
	})
	if exempt {
		return nil, true
	}
	slices.SortFunc(matches, func(a, b RouteMatch) int { return strings.Compare(a.Def.ID, b.Def.ID) })
	return matches, false
}

// Dimensions a route gate counts by (Gate.Dimension).
const (
	DimensionAll   = "all"   // one bucket every caller shares (max_requests)
	DimensionIP    = "ip"    // a bucket per client address (ip_max_requests)
	DimensionUser  = "user"  // a bucket per user (user_max_requests)
	DimensionAgent = "agent" // a bucket per agent (agent_max_requests)
	DimensionTeam  = "team"  // a bucket per team (team_max_requests)
)

// routeTarget is the target part of a route tier's per-caller bucket
// keys: ct|<window>|<caller>|route:<tier>.
func routeTarget(d *ratelimit.Definition) string { return ratelimit.EntityRoute + ":" + d.Name }

// RouteGates lists the gates of the route definitions a call matched:
// the tier's shared bucket, and (not for administrators, who bypass caller
// limits) one bucket per client address, per user or per agent, and one
// per team. ipKey is the call's client address as keyed (empty: none
// known); team is the call's team (empty: none, and no team gate).
func RouteGates(matches []RouteMatch, callerType, identity, ipKey, team string, admin bool, now time.Time) []Gate {
	var gates []Gate
	for _, m := range matches {
		d := m.Def
		shadow := d.Mode == ratelimit.ModeShadow
		add := func(dim string, limit, burst *int, caller string) {
			if limit == nil {
				return
			}
			var key string
			switch {
			case caller == "":
				key = counterkey.Target(*d, "").String()
			case shadow:
				key = counterkey.Shadow(*d, caller, routeTarget(d)).String()
			default:
				k := counterkey.CallerTarget(d.WindowSeconds, caller, routeTarget(d))
				k.Algorithm = counterkey.OfDefinition(*d)
				key = k.String()
			}
			g := newGate(*d, key, int64(*limit), burst, shadow, now)
			g.Matched, g.Dimension = m.Pattern, dim
			gates = append(gates, g)
		}
		add(DimensionAll, d.MaxRequests, d.Burst, "")
		if admin {
			continue
		}
		if ipKey != "" {
			add(DimensionIP, d.IPMaxRequests, d.IPBurst, counterkey.CallerIP+":"+ipKey)
		}
		switch callerType {
		case ratelimit.SubjectUser:
			add(DimensionUser, d.UserMaxRequests, d.UserBurst, callerType+":"+identity)
		case "agent":
			add(DimensionAgent, d.AgentMaxRequests, d.AgentBurst, callerType+":"+identity)
		}
		if team != "" {
			add(DimensionTeam, d.TeamMaxRequests, d.TeamBurst, counterkey.CallerTeam+":"+team)
		}
	}
	return gates
}

// Exempt lists the exempt route definitions matching a call's method and
// path, each once with the first of its patterns that matched, in id
// order.
func (x *RouteIndex) Exempt(method, path string) []RouteMatch {
	var out []RouteMatch
	if x == nil {
		return out
	}
	x.patterns.match(path, func(pattern string, r routeRule) {
		if !r.def.Exempt || (len(r.methods) > 0 && !slices.Contains(r.methods, method)) ||
			slices.ContainsFunc(out, func(m RouteMatch) bool { return m.Def.ID == r.def.ID }) {
			return
		}
		out = append(out, RouteMatch{Def: r.def, Pattern: pattern})
	})
	slices.SortFunc(out, func(a, b RouteMatch) int { return strings.Compare(a.Def.ID, b.Def.ID) })
	return out
}
