package plan

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Descriptors: Envoy's rate-limit descriptors as gates (docs/envoy.md).
// A call may carry a domain and descriptors (Call.Descriptors); each descriptor selects at most one node of the
// domain's descriptor definitions, as Envoy's ratelimit service does, and
// the definitions of that node (one per window) become gates of the call,
// taken with its other gates all or nothing. The protocol adapter
// (pkg/envoyrls) builds the Call and renders the Decision; the matching
// lives here so that every protocol decides alike.

// DescriptorRequest is the domain and descriptors of a call.
type DescriptorRequest struct {
	Domain      string
	Descriptors []Descriptor
	// DescriptorsOnly: the call takes its descriptors' gates alone; its
	// identities still select quarantine and the administrators' exemption,
	// but their caller and target definitions are not taken (pkg/envoyrls'
	// every-descriptor mode takes those in a call of their own, once).
	DescriptorsOnly bool
	// Only, when above zero, is the one descriptor (1-based) whose gates
	// the call takes; the others are matched all the same, so that a
	// limit another descriptor of the request replaces is not taken
	// (pkg/envoyrls' every-descriptor mode decides a request one
	// descriptor at a time).
	Only int
	// CountOver: the fixed-window gates of the call take its cost even
	// when the call is denied (and a full shadow gate even when it is
	// allowed), so that their counters go past their limits as Envoy's
	// service counts them (pkg/envoyrls' every-descriptor mode). The
	// decision is the same; only what is counted differs. The other
	// algorithms keep all or nothing.
	CountOver bool
}

// Descriptor is one descriptor of a call: its entries, outermost first, and
// an optional limit override.
type Descriptor struct {
	Entries []ratelimit.DescriptorEntry
	// Limit, when set, replaces what the descriptor's definitions say
	// (Envoy's per-descriptor limit override): one fixed-window gate of
	// RequestsPerUnit per WindowSeconds, keyed by the request's
	// descriptor. It applies in a domain that has descriptor definitions,
	// matching or not, and never in an unknown one (as Envoy's service).
	Limit *DescriptorLimit
}

// DescriptorLimit is a per-request limit override.
type DescriptorLimit struct {
	RequestsPerUnit int64
	WindowSeconds   int
}

// DescriptorMatch is what a descriptor of a call matched, reported by
// Enforcer.MatchDescriptors.
type DescriptorMatch struct {
	// Known: the domain has descriptor definitions.
	Known bool
	// Definitions are the definitions of the node the descriptor matched
	// (empty: no match, or the node only leads to others).
	Definitions []ratelimit.Definition
	// Unlimited: the match is an unlimited definition.
	Unlimited bool
	// Replaced: every limit it matched is replaced by another descriptor's
	// (replaces).
	Replaced bool
}

// descNode is one node of a domain's descriptor tree.
type descNode struct {
	exact    map[ratelimit.DescriptorEntry]*descNode
	keyOnly  map[string]*descNode
	wildcard []descWild
	defs     []ratelimit.Definition
}

type descWild struct {
	key     string
	pattern string   // the value, with its '*'
	parts   []string // the value split at '*'
	node    *descNode
}

func (n *descNode) leaf() bool {
	return len(n.exact) == 0 && len(n.keyOnly) == 0 && len(n.wildcard) == 0
}

// addDescriptor puts d at its path in the domain trees.
func addDescriptor(trees map[string]*descNode, d ratelimit.Definition) {
	domain, entries, err := ratelimit.ParseDescriptorName("name", d.Name)
	if err != nil {
		return // validated on write: cannot happen
	}
	d.Domain, d.Descriptor = domain, entries
	n := trees[domain]
	if n == nil {
		n = &descNode{}
		trees[domain] = n
	}
	for _, e := range entries {
		var next *descNode
		switch {
		case strings.Contains(e.Value, "*"):
			for _, w := range n.wildcard {
				if w.key == e.Key && w.pattern == e.Value {
					next = w.node
				}
			}
			if next == nil {
				next = &descNode{}
				n.wildcard = append(n.wildcard, descWild{key: e.Key, pattern: e.Value, parts: strings.Split(e.Value, "*"), node: next})
				// The most specific pattern first: more literal bytes,
				// then the pattern's text (the order is stable).
				slices.SortStableFunc(n.wildcard, func(a, b descWild) int {
					return cmp.Or(cmp.Compare(literal(b.parts), literal(a.parts)), strings.Compare(a.key, b.key),
						strings.Compare(a.pattern, b.pattern))
				})
			}
		case e.Value != "":
			if n.exact == nil {
				n.exact = map[ratelimit.DescriptorEntry]*descNode{}
			}
			if next = n.exact[e]; next == nil {
				next = &descNode{}
				n.exact[e] = next
			}
		default:
			if n.keyOnly == nil {
				n.keyOnly = map[string]*descNode{}
			}
			if next = n.keyOnly[e.Key]; next == nil {
				next = &descNode{}
				n.keyOnly[e.Key] = next
			}
		}
		n = next
	}
	n.defs = append(n.defs, d)
}

func literal(parts []string) int {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return n
}

// globMatch reports whether value matches the pattern split at '*'.
func globMatch(parts []string, value string) bool {
	if len(parts) == 1 {
		return parts[0] == value
	}
	if !strings.HasPrefix(value, parts[0]) {
		return false
	}
	value = value[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(value, p)
		if i < 0 {
			return false
		}
		value = value[i+len(p):]
	}
	return strings.HasSuffix(value, last)
}

// matchDescriptor walks the domain's tree as Envoy's service does: at each
// entry the exact key and value, else the first wildcard of the key whose
// pattern matches, else the key alone; the node reached at the last entry
// is the match when it has definitions. shared holds, per entry matched by
// a wildcard, its pattern (for share_threshold).
func matchDescriptor(root *descNode, entries []ratelimit.DescriptorEntry) (node *descNode, shared []string) {
	n := root
	for i, e := range entries {
		next := n.exact[e]
		if next == nil {
			for _, w := range n.wildcard {
				if w.key == e.Key && globMatch(w.parts, e.Value) {
					next = w.node
					if shared == nil {
						shared = make([]string, len(entries))
					}
					shared[i] = w.pattern
					break
				}
			}
		}
		if next == nil {
			next = n.keyOnly[e.Key]
		}
		if next == nil {
			return nil, nil
		}
		if i == len(entries)-1 {
			if len(next.defs) == 0 {
				return nil, nil
			}
			return next, shared
		}
		if next.leaf() {
			return nil, nil // the request is deeper than the configuration
		}
		n = next
	}
	return nil, nil
}

// DescriptorMatches matches each descriptor of c and applies replaces:
// a limit whose limit_name another matched limit replaces is dropped.
func DescriptorMatches(idx *Index, r *DescriptorRequest) ([]DescriptorMatch, [][]string) {
	if r == nil {
		return nil, nil
	}
	root := idx.descriptors[r.Domain]
	out := make([]DescriptorMatch, len(r.Descriptors))
	var shared [][]string // allocated by the first wildcard match
	if root == nil {
		return out, nil
	}
	var replacing map[string]bool // allocated by the first replaces
	for i, desc := range r.Descriptors {
		out[i].Known = true
		if desc.Limit != nil || len(desc.Entries) == 0 {
			continue
		}
		n, sh := matchDescriptor(root, desc.Entries)
		if n == nil {
			continue
		}
		out[i].Definitions = n.defs
		if sh != nil {
			if shared == nil {
				shared = make([][]string, len(r.Descriptors))
			}
			shared[i] = sh
		}
		for _, d := range n.defs {
			for _, r := range d.Replaces {
				if replacing == nil {
					replacing = map[string]bool{}
				}
				replacing[r] = true
			}
			out[i].Unlimited = out[i].Unlimited || d.Unlimited
		}
	}
	if len(replacing) > 0 {
		for i := range out {
			kept := out[i].Definitions[:0:0]
			for _, d := range out[i].Definitions {
				if d.LimitName == "" || !replacing[d.LimitName] {
					kept = append(kept, d)
				}
			}
			if len(kept) == 0 && len(out[i].Definitions) > 0 {
				out[i].Replaced = true
			}
			out[i].Definitions = kept
		}
	}
	return out, shared
}

// DescriptorGates appends the gates of c's descriptors to gates.
func DescriptorGates(gates []Gate, idx *Index, r *DescriptorRequest, now time.Time) []Gate {
	if r == nil {
		return gates
	}
	matches, shared := DescriptorMatches(idx, r)
	gates = slices.Grow(gates, len(r.Descriptors))
	for i, desc := range r.Descriptors {
		m := matches[i]
		if !m.Known || (r.Only > 0 && i != r.Only-1) {
			continue
		}
		if desc.Limit != nil {
			w := desc.Limit.WindowSeconds
			k, key := counterkey.DescriptorWithString("", r.Domain, desc.Entries, nil, w)
			// The override's gate is named by its counter's definition id.
			d := ratelimit.Definition{ID: k.DefinitionID, Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: w}
			g := newGate(d, key, desc.Limit.RequestsPerUnit, nil, false, now)
			g.Descriptor = i + 1
			gates = append(gates, g)
			continue
		}
		for _, d := range m.Definitions {
			if d.Unlimited || d.MaxRequests == nil {
				continue
			}
			var sh []string
			if d.ShareThreshold && shared != nil {
				sh = shared[i]
			}
			_, key := counterkey.DescriptorWithString(algorithmOf(d), r.Domain, desc.Entries, sh, d.WindowSeconds)
			g := newGate(d, key, int64(*d.MaxRequests), d.Burst, d.Mode == ratelimit.ModeShadow, now)
			g.Descriptor = i + 1
			gates = append(gates, g)
		}
	}
	return gates
}
