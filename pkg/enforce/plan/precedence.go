package plan

import (
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Level is how specifically a caller or caller_target definition selects
// a caller, least specific first: the order in which overrides outrank
// one another on a bucket they share (docs/api.md, "Overrides: which
// limit applies").
type Level int8

const (
	// LevelEveryone: a definition for everyone.
	LevelEveryone Level = iota
	// LevelNetwork: a group of the network holding the caller's address.
	LevelNetwork
	// LevelTeam: a group of the caller's team, or a definition naming the
	// team.
	LevelTeam
	// LevelGroup: a group of the caller's own membership (user:, client:).
	LevelGroup
	// LevelSubject: a definition naming the caller's user or client.
	LevelSubject
)

// levelOf is the level at which d selects a caller through via (the
// membership, the subject named, or everyone).
func levelOf(d ratelimit.Definition, via string) Level {
	switch {
	case d.EntityType == ratelimit.EntityTeam:
		return LevelTeam
	case ratelimit.IsSubjectEntity(d.EntityType):
		return LevelSubject
	case via == MatchedEveryone:
		return LevelEveryone
	case strings.HasPrefix(via, ratelimit.SubjectNetwork+":"):
		return LevelNetwork
	case strings.HasPrefix(via, ratelimit.SubjectTeam+":"):
		return LevelTeam
	}
	return LevelGroup
}

// precedence ranks the definitions sharing one bucket: every definition
// that is not an override ranks below every override, so that without
// overrides they all rank alike and the most restrictive applies, as it
// always has; overrides rank by their level.
type precedence int8

// notOverride is the precedence of a definition that is not an override.
const notOverride precedence = -1

func precedenceOf(d ratelimit.Definition, via string) precedence {
	if !d.Overrides() {
		return notOverride
	}
	return precedence(levelOf(d, via))
}

// outranks reports whether gate g takes the bucket it shares with have:
// a higher precedence, or the same and a lower limit (then burst).
func (g Gate) outranks(have Gate) bool {
	if g.precedence != have.precedence {
		return g.precedence > have.precedence
	}
	return g.Limit < have.Limit || (g.Limit == have.Limit && g.Burst < have.Burst)
}

// take makes winner the gate of a bucket loser shared with it: the
// definitions the loser had overridden are the winner's, and the loser
// itself when it ranks lower (an override replacing it rather than a more
// restrictive limit outranking it). It reports whether the loser was
// overridden.
func take(winner, loser Gate) (Gate, bool) {
	overridden := loser.precedence < winner.precedence
	if len(loser.Overrides) > 0 || overridden {
		all := make([]string, 0, len(winner.Overrides)+len(loser.Overrides)+1)
		all = append(append(all, winner.Overrides...), loser.Overrides...)
		if overridden {
			all = append(all, loser.DefinitionID)
		}
		winner.Overrides = all
	}
	return winner, overridden
}
