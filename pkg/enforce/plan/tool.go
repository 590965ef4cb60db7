package plan

import (
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// toolGates lists the gates of the tool (or skill) definitions a call
// matches: by exact name or glob (Index.tools, indexed so that the
// definitions that cannot match cost nothing), narrowed by their kinds,
// each kept per its tool scope. caller is the call's caller as keyed
// (user:<name>, agent:<id>, ip:<key>); name is <target>:<tool>.
//
// Keys: global is t|<definition id> (as tool definitions always were),
// tool t|<definition id>|<tool>, principal
// ct|<window>|<caller>|<entity type>:<definition name> and principal_tool
// ct|<window>|<caller>|<entity type>:<tool>. Per-caller buckets of one
// window and algorithm on the same key are one bucket, the most
// restrictive limit winning, as caller_target buckets are; administrators
// have none.
//
// log, when not nil, is told of the definitions a more restrictive one
// outranked on a shared bucket.
func toolGates(idx *Index, t Target, caller, name string, admin bool, now time.Time, log *Log) []Gate {
	leafType := ratelimit.EntityMCPTool
	if t.Type == ratelimit.EntityA2AAgent {
		leafType = ratelimit.EntityA2ASkill
	}
	tools := idx.tools[leafType]
	if tools == nil {
		return nil
	}
	kind := strings.ToLower(strings.TrimSpace(t.Kind))
	if kind == "" {
		kind = ratelimit.KindTool
	}
	var gates []Gate
	byKey := map[string]int{}
	tools.match(name, func(pattern string, d *ratelimit.Definition) {
		if d.MaxRequests == nil || (len(d.Kinds) > 0 && !slices.Contains(d.Kinds, kind)) {
			return
		}
		shadow := d.Mode == ratelimit.ModeShadow
		scope := d.ToolScope
		if scope == "" {
			scope = ratelimit.ToolScopeGlobal
		}
		var key string
		switch scope {
		case ratelimit.ToolScopeTool:
			key = counterkey.Target(*d, name).String()
		case ratelimit.ToolScopePrincipal, ratelimit.ToolScopePrincipalTool:
			if admin || log.uncalled(*d, pattern, scope) {
				return
			}
			on := leafType + ":" + name
			if scope == ratelimit.ToolScopePrincipal {
				on = leafType + ":" + d.Name
			}
			if shadow {
				key = counterkey.Shadow(*d, caller, on).String()
			} else {
				k := counterkey.CallerTarget(d.WindowSeconds, caller, on)
				k.Algorithm = counterkey.OfDefinition(*d)
				key = k.String()
			}
		default:
			key = counterkey.Target(*d, "").String()
		}
		g := newGate(*d, key, int64(*d.MaxRequests), d.Burst, shadow, now)
		g.Matched, g.Dimension = pattern, scope
		if i, ok := byKey[key]; ok {
			// As Gates: the lowest limit wins, and the bucket takes the
			// strictest fail policy of its definitions (closed, degrade,
			// open) and leases by the strictest mode (never, then
			// always, then auto).
			lm, fp := max(gates[i].lease, g.lease), StricterFailPolicy(gates[i].failPolicy, g.failPolicy)
			if g.Limit < gates[i].Limit || (g.Limit == gates[i].Limit && g.Burst < gates[i].Burst) {
				gates[i], g = g, gates[i]
			}
			log.outranked(g, false)
			gates[i].lease, gates[i].failPolicy = lm, fp
			return
		}
		byKey[key] = len(gates)
		gates = append(gates, g)
	})
	return gates
}
