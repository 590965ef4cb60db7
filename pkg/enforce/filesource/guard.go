package filesource

import (
	"bytes"
	"fmt"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// AllowShrinkMarker, as the last line of a state file, lets that file
// load however much it shrinks the state or whichever quarantine group it
// empties. It has to be the last line so that a file cut short cannot
// carry it: a cut drops the end. It is a YAML comment, so rlctl apply
// reads the file alike; a JSON file cannot carry it (restart the gateway,
// whose first load is not guarded, or set Options.AllowShrink).
const AllowShrinkMarker = "# rlctl: allow-shrink"

// DefaultMaxShrink is Options.MaxShrink's default: a reload may drop at
// most half the definitions and memberships.
const DefaultMaxShrink = 0.5

// Reasons a change is refused, the values of the metric's reason label.
const (
	reasonUnreadable = "unreadable" // missing, not a regular file, too large, a read error
	reasonInvalid    = "invalid"    // does not parse, or breaks a rule
	reasonShrink     = "shrink"     // drops more than MaxShrink of the state
	reasonQuarantine = "quarantine" // empties a quarantine group that had members
)

// guard refuses a new state that looks like a file cut short rather than
// a change meant: one that leaves a quarantine group with members in prev
// empty (lifting an incident's quarantine), or that holds fewer than
// (1 - maxShrink) of prev's definitions and memberships. The added
// sentinels are not counted. A file whose last line is
// AllowShrinkMarker passes.
func guard(path string, prev, next enforce.State, data []byte, maxShrink float64) (reason string, err error) {
	if lastLine(data) == AllowShrinkMarker {
		return "", nil
	}
	hint := fmt.Sprintf("if the change is meant, end the file with the line %q; write a state file to a temporary file in its directory and rename it over the old one, so that no one reads it half-written", AllowShrinkMarker)
	for _, g := range []string{ratelimit.GroupQuarantineCallers, ratelimit.GroupQuarantineTargets} {
		if had := inGroup(prev, g); had > 0 && inGroup(next, g) == 0 {
			return reasonQuarantine, fmt.Errorf("%s: group %s would lose all its members (%d before, none now): a file cut short looks like this, so the change is refused (%s)",
				path, g, had, hint)
		}
	}
	had, has := size(prev), size(next)
	if float64(has) < (1-maxShrink)*float64(had) {
		return reasonShrink, fmt.Errorf("%s: %d definitions and memberships, %d before: more than %g%% fewer (MaxShrink %g) looks like a file cut short, so the change is refused (%s)",
			path, has, had, maxShrink*100, maxShrink, hint)
	}
	return "", nil
}

// size counts the definitions (the sentinels aside) and memberships.
func size(st enforce.State) int {
	n := len(st.Memberships)
	for _, d := range st.Definitions {
		if !ratelimit.IsSentinel(d.ID) {
			n++
		}
	}
	return n
}

func inGroup(st enforce.State, group string) int {
	n := 0
	for _, m := range st.Memberships {
		if m.HasGroup(group) {
			n++
		}
	}
	return n
}

// lastLine is data's last line that is not blank, trimmed.
func lastLine(data []byte) string {
	data = bytes.TrimRight(data, " \t\r\n")
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[i+1:]
	}
	return string(bytes.TrimSpace(data))
}
