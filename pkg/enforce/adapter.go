package enforce

import "time"

// What the protocol adapters (pkg/httpgate, pkg/envoyrls) read of the
// Enforcer and its decisions beyond their fields, to render a decision
// without holding a rule of their own.

// Now is the Enforcer's clock (Options.Now, else time.Now): the time its
// decisions are made at, against which a decision's Reset and the waits
// of its gates are measured.
func (e *Enforcer) Now() time.Time { return e.now() }

// Headline finds the gate whose numbers d.Limit, d.Remaining and d.Reset
// carry, by the rule the Enforcer picks them with: on a throttle the
// denying gate that must wait longest (the first of equals), else the
// enforce gate with the least room (the first of equals, in the order of
// d.Gates). index is its place in d.Gates (-1 when it is not there). ok is
// false when no gate carries them (a hand-made Decision that does not list
// its gates, or one without gates). now is the time d was made at.
func (d Decision) Headline(now time.Time) (g Gate, index int, ok bool) {
	if !d.Allowed && len(d.Denied) > 0 {
		latest := longestWait(d.Denied, now)
		index = -1
		for i, g := range d.Gates {
			if g.Key() == latest.Key() && g.DefinitionID == latest.DefinitionID && g.WindowSeconds == latest.WindowSeconds {
				index = i
				break
			}
		}
		return latest, index, true
	}
	found := -1
	for i, g := range d.Gates {
		if !g.Shadow && (found < 0 || g.Remaining < d.Gates[found].Remaining) {
			found = i
		}
	}
	if found < 0 || d.Gates[found].Limit != d.Limit {
		return Gate{}, -1, false
	}
	return d.Gates[found], found, true
}
