package plan

import "github.com/rlctl/rlctl/pkg/ratelimit"

// Log collects, while a plan's view is built, what its gates do not
// show. Every method is a no-op on a nil log: decisions pass none.
type Log struct {
	// AnyTarget: the call is explained as its caller on any target, so
	// its caller_target definitions are kept though the call names none.
	AnyTarget bool
	// AnyCaller: the call is explained as any caller, so its tool
	// definitions kept per caller are kept though it names none.
	AnyCaller bool
	// Losers are gates a more restrictive definition's gate, or an
	// override's, replaced on their shared bucket; Overridden says which
	// of them an override replaced (by index in Losers).
	Losers     []Gate
	Overridden []bool
	// PerCaller are the definitions a plan lists without a counter: the
	// caller_target ones of an AnyTarget plan, the tool ones kept per
	// caller of an AnyCaller plan.
	PerCaller []Keyless
	// Groups are the caller's groups, each with the membership that put
	// the caller in it (NoteGroups).
	Groups []ViaGroup
}

// Keyless is a definition that applies to a plan's call
// without a counter of its own in the plan, and why.
type Keyless struct {
	Def                     ratelimit.Definition
	Via, Matched, Dimension string
}

func (l *Log) outranked(g Gate, overridden bool) {
	if l != nil {
		l.Losers = append(l.Losers, g)
		l.Overridden = append(l.Overridden, overridden)
	}
}

func (l *Log) untargeted(d ratelimit.Definition, via string) {
	if l != nil && l.AnyTarget {
		l.PerCaller = append(l.PerCaller, Keyless{Def: d, Via: via})
	}
}

// unkeyed notes a definition kept per client address or per team that
// applies to the caller, though the call names no address or no team to
// key its bucket by: a plan lists it without a counter.
func (l *Log) unkeyed(d ratelimit.Definition, via, per string) {
	if l != nil {
		l.PerCaller = append(l.PerCaller, Keyless{Def: d, Via: via, Dimension: per})
	}
}

// uncalled reports whether a tool definition kept per caller is left to
// the plan of any caller (true), which lists it without a counter.
func (l *Log) uncalled(d ratelimit.Definition, pattern, scope string) bool {
	if l == nil || !l.AnyCaller {
		return false
	}
	l.PerCaller = append(l.PerCaller, Keyless{Def: d, Matched: pattern, Dimension: scope})
	return true
}

// CallerOnly reports whether the caller's gates are built for a call
// without a target (an anyTarget plan).
func (l *Log) CallerOnly() bool { return l != nil && l.AnyTarget }

// NoteGroups notes the caller's groups as Gates walks them.
func (l *Log) NoteGroups(members Members, who Caller, network *Member) {
	if who.Caller == "" {
		return
	}
	groups := CallerGroups(members, who.UserKey, who.ClientKey, who.TeamKey)
	if network != nil {
		groups = appendVia(groups, network.Groups, who.NetworkKey)
	}
	l.Groups = append(l.Groups, groups...)
}
