package counterkey

import (
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Parts are the parts of a counter key that the counters'
// selectors match on (CounterSelector: by caller, by target, by
// definition), each empty when the key has none. A store that serves
// those selectors through indexes keeps them beside the key, so that it
// never reads them back out of the key's text: a new kind of key is then
// a change to the key type alone.
type Parts struct {
	// Caller is the key's caller (Key.Caller): user:<name>,
	// agent:<client id>, ip:<address>, or a p key's ip:<key> or
	// team:<name>.
	Caller string
	// Target is what the key counts calls to, as <entity_type>:<name>
	// (Key.OnTarget).
	Target string
	// Definition is the definition id of an s, t or p key.
	Definition string
}

// PartsOf returns the parts of key (a Key's String). Keys of the
// failed-credential throttle and of escalation (af, al, v), and strings
// that are no counter key, have none: no selector picks them.
func PartsOf(key string) Parts {
	k, err := Parse(key)
	if err != nil {
		return Parts{}
	}
	switch k.Kind {
	case KindCaller, KindCallerTarget, KindShadow, KindPer:
		return Parts{Caller: k.Caller, Target: k.Target, Definition: k.DefinitionID}
	case KindTarget:
		return Parts{Target: targetOf(k), Definition: k.DefinitionID}
	}
	return Parts{}
}

// targetOf is k.OnTarget for a t key, sliced out of its definition id
// (target:<entity_type>:<name>:<window>) rather than assembled, so that
// a descriptor gate, built per call, allocates nothing for it.
func targetOf(k Key) string {
	if k.Server != "" {
		return k.OnTarget()
	}
	id := k.DefinitionID
	rest, ok := strings.CutPrefix(id, ratelimit.AxisTarget+":")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i < 0 {
		return k.OnTarget()
	}
	return rest[:i]
}
