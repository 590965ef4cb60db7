package plan

import (
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Caller is who a call is, in every dimension a caller definition can
// key its buckets by.
type Caller struct {
	// Caller is the per-caller identity: user:<name>, agent:<client id>
	// or ip:<key> for an anonymous call; Agent says it is an agent.
	Caller string
	Agent  bool
	// IP is ip:<key> of the call's client address, Team team:<name> of its
	// team; empty when the call has none.
	IP, Team string
	// UserKey, ClientKey and TeamKey are the membership ids of the call's
	// user, client and team (empty when it has none); NetworkKey that of
	// the most specific network holding its client address.
	UserKey, ClientKey, TeamKey, NetworkKey string
}

// Target is what a call names as its target: its type, its name (as
// definitions know it: normalized when the type is known), and the tool
// (or skill) it calls there, with its kind.
type Target struct {
	Type, Name, Tool, Kind string
}

// Gates lists the caller, caller_target, target, server-group and tool
// gates of a call, in the reference's order of axes.
//
// An anonymous caller (ip:<key>) takes the groups of its network (network
// non-nil) and is gated by their user limits, as an unauthenticated user,
// and by the user limits of the definitions for everyone.
//
// log, when not nil, is told of what the gates do not show: the definitions
// a more restrictive one outranked on a shared bucket, and the
// caller_target definitions of a call explained without a target.
func Gates(idx *Index, members Members, t Target, who Caller, network *Member, admin bool, now time.Time, log *Log) []Gate {
	targetName := t.Name
	// Room for the usual three gates and a tool gate: one allocation
	// where growing by appends copied the (large) gates three times.
	gates := make([]Gate, 0, 4)
	caller := who.Caller
	target := t.Type + ":" + targetName
	if !admin && who.Caller != "" { // no caller: a descriptor call without an identity
		groups := CallerGroups(members, who.UserKey, who.ClientKey, who.TeamKey)
		if network != nil {
			groups = appendVia(groups, network.Groups, who.NetworkKey)
		}
		// Per axis, window and algorithm, the enforce definitions share
		// one bucket per caller, and the most restrictive one wins (the
		// lowest limit, then the lowest burst), unless overrides are among
		// them: then the most specific override wins (precedence.go), the
		// most restrictive of its level. Shadow definitions each count on
		// their own, as do definitions whose buckets are per IP, per team
		// or shared.
		best := map[bucketSlot]int{} // index in gates
		add := func(d ratelimit.Definition, via string) {
			limit, burst := d.UserMaxRequests, d.UserBurst
			if who.Agent {
				limit, burst = d.AgentMaxRequests, d.AgentBurst
			}
			if limit == nil {
				return // this definition does not gate this caller type
			}
			if d.Axis == ratelimit.AxisCallerTarget && t.Type == "" {
				log.untargeted(d, via)
				return // a descriptor call without a target
			}
			on := ""
			if d.Axis == ratelimit.AxisCallerTarget {
				on = target
			}
			shadow := d.Mode == ratelimit.ModeShadow
			switch d.Per {
			case ratelimit.PerIP, ratelimit.PerTeam, ratelimit.PerShared:
				subject := ""
				switch d.Per {
				case ratelimit.PerIP:
					subject = who.IP
				case ratelimit.PerTeam:
					subject = who.Team
				}
				if subject == "" && d.Per != ratelimit.PerShared {
					log.unkeyed(d, via, d.Per)
					return // no client IP, or no team: nothing to key by
				}
				gates = append(gates, matched(newGate(d, counterkey.Per(d, subject, on).String(), int64(*limit), burst, shadow, now), via))
				return
			}
			if shadow {
				gates = append(gates, matched(newGate(d, counterkey.Shadow(d, caller, on).String(), int64(*limit), burst, true, now), via))
				return
			}
			k := counterkey.Caller(d.WindowSeconds, caller)
			if d.Axis == ratelimit.AxisCallerTarget {
				k = counterkey.CallerTarget(d.WindowSeconds, caller, target)
			}
			k.Algorithm = counterkey.OfDefinition(d)
			slot := bucketSlot{k.Kind, d.WindowSeconds, k.Algorithm}
			gate := matched(newGate(d, k.String(), int64(*limit), burst, false, now), via)
			gate.precedence = precedenceOf(d, via)
			if i, ok := best[slot]; ok {
				fp := StricterFailPolicy(gates[i].failPolicy, gate.failPolicy)
				// never on any of them, else always on any, else auto.
				lm := max(gates[i].lease, gate.lease)
				if gate.outranks(gates[i]) {
					gates[i], gate = gate, gates[i]
				}
				var overridden bool
				gates[i], overridden = take(gates[i], gate)
				log.outranked(gate, overridden)
				gates[i].failPolicy, gates[i].lease = fp, lm
				return
			}
			best[slot] = len(gates)
			gates = append(gates, gate)
		}
		for _, g := range groups {
			for _, d := range idx.GroupDefs[g.Name] {
				if !d.Everyone { // added below, once
					add(d, g.Via)
				}
			}
		}
		for _, key := range []string{who.UserKey, who.ClientKey, who.TeamKey} {
			for _, d := range idx.SubjectDefs[key] {
				add(d, key)
			}
		}
		for _, d := range idx.EveryoneDefs {
			add(d, MatchedEveryone)
		}
	}
	addTarget := func(d ratelimit.Definition, key string) {
		if d.MaxRequests != nil {
			gates = append(gates, newGate(d, key, int64(*d.MaxRequests), d.Burst, d.Mode == ratelimit.ModeShadow, now))
		}
	}
	for _, d := range idx.TargetDefs[targetKey(t.Type, targetName)] {
		addTarget(d, counterkey.Target(d, "").String())
	}
	if t.Type == ratelimit.EntityMCPServer {
		for _, d := range idx.ServerGroups[targetName] {
			addTarget(d, counterkey.Target(d, targetName).String())
		}
	}
	if tool := strings.TrimSpace(t.Tool); tool != "" {
		gates = append(gates, toolGates(idx, t, caller, targetName+":"+tool, admin, now, log)...)
	}
	return gates
}

// bucketSlot is what the enforce caller and caller_target definitions of a
// caller share one bucket by: the axis (its key kind), the window and the
// algorithm.
type bucketSlot struct {
	kind      counterkey.Kind
	window    int
	algorithm algorithm.Name
}

// ViaGroup is a group of a call's caller and the membership that put the
// caller in it (a membership id: user:alice, client:bot, team:acme,
// network:10.0.0.0/8).
type ViaGroup struct{ Name, Via string }

// CallerGroups merges the groups of the caller's user, client and team
// memberships, leaving out the quarantine groups; a group two of them name
// is the first one's.
func CallerGroups(members Members, keys ...string) []ViaGroup {
	var groups []ViaGroup
	for _, k := range keys {
		if k == "" {
			continue
		}
		m, _ := members.Get(k)
		groups = appendVia(groups, m.Groups, k)
	}
	return groups
}

// appendVia adds the groups of more that groups lacks, selected through
// the membership via, leaving out the quarantine groups.
func appendVia(groups []ViaGroup, more []string, via string) []ViaGroup {
	for _, g := range more {
		if g == ratelimit.GroupQuarantineCallers || g == ratelimit.GroupQuarantineTargets ||
			slices.ContainsFunc(groups, func(have ViaGroup) bool { return have.Name == g }) {
			continue
		}
		groups = append(groups, ViaGroup{g, via})
	}
	return groups
}
