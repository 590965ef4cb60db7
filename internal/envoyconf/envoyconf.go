// Package envoyconf reads and writes the configuration format of Envoy's
// reference rate-limit service (github.com/envoyproxy/ratelimit, README
// "Configuration"): one YAML document per domain, nested descriptor lists
// with optional rate limits. Parse turns a file into descriptor
// definitions (`rlctl import envoy-ratelimit`), Render turns descriptor
// definitions back into that format (`rlctl export --format
// envoy-ratelimit`). docs/envoy.md describes the mapping.
package envoyconf

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Error is a problem at one place of one file: Error() reads
// "<file>:<line>: <field>: <message>".
type Error struct {
	File    string
	Line    int
	Field   string // the path of the field, e.g. descriptors[0].rate_limit.unit
	Message string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Message)
	}
	return fmt.Sprintf("%s:%d: %s: %s", e.File, e.Line, e.Field, e.Message)
}

// Errors are every problem found in one parse.
type Errors []*Error

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

type parser struct {
	ctx    context.Context
	file   string
	errs   Errors
	loader *Loader
	// done is ctx's error once it has ended: the parse stops there.
	done error
}

func (p *parser) fail(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, &Error{File: p.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

// unsupported are documented fields rlctl cannot honour, and why.
var unsupported = map[string]string{
	"quota_mode": "quota mode is not supported: rlctl limits enforce (or shadow), they do not only report quota",
	"metadata":   "descriptor metadata (dynamic metadata in answers) is not supported",
}

// fields reads a mapping, refusing what is not one, duplicate keys and
// keys not in known; it returns the values by key.
func (p *parser) fields(n *yaml.Node, path string, known ...string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		p.fail(n, path, "must be a mapping (got %s)", kindName(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		field := join(path, k.Value)
		if _, dup := out[k.Value]; dup {
			p.fail(k, field, "duplicate key %q (first at line %d)", k.Value, lineOfKey(n, k.Value))
			continue
		}
		if why, ok := unsupported[k.Value]; ok {
			p.fail(k, field, "%s", why)
			out[k.Value] = v
			continue
		}
		if !slices.Contains(known, k.Value) {
			p.fail(k, field, "unknown field %q (known: %s)", k.Value, strings.Join(known, ", "))
			out[k.Value] = v
			continue
		}
		out[k.Value] = v
	}
	return out
}

func lineOfKey(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return 0
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	if n == nil {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, field, "must be a string (got %s)", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) boolean(n *yaml.Node, field string) bool {
	if n == nil {
		return false
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		p.fail(n, field, "must be true or false (got %s)", kindName(n))
	}
	return b
}

func (p *parser) seq(n *yaml.Node, field string) []*yaml.Node {
	if n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.fail(n, field, "must be a list (got %s)", kindName(n))
		return nil
	}
	return n.Content
}

// inherited is what a node's nested descriptors take from the entries
// above them: share_threshold (Envoy tracks it on the wildcard entry it is
// set on), and the nearest wildcard entry above with share_threshold on
// and with it off, to refuse a path that mixes them.
type inherited struct {
	share        bool
	shareOn, off *wildMark
}

// wildMark is a wildcard entry above a node.
type wildMark struct {
	value string
	line  int
}

// Options tune a Loader.
type Options struct {
	// MergeDomains lets the descriptors of one domain come from several
	// files (or documents), merged, as Envoy's service does with
	// MERGE_DOMAIN_CONFIG=true. Without it a domain read twice is refused,
	// as that service refuses it by default.
	MergeDomains bool
}

// Loader reads files of Envoy's format one after another, and checks what
// spans them: a domain in two files, and the order of overlapping
// wildcards (Warnings).
type Loader struct {
	opts    Options
	domains map[string]place
	// wild holds, per node of the descriptor tree (its domain and the
	// entries above it, as a descriptor name), its wildcard entries in
	// the order the files give them; nodes in first-seen order.
	wild  map[string][]wildEntry
	nodes []string
}

// place is where something was read.
type place struct {
	file string
	line int
}

type wildEntry struct {
	key, value string
	literal    int // its bytes other than '*'
	at         place
}

// NewLoader returns a Loader that has read nothing.
func NewLoader(opts Options) *Loader {
	return &Loader{opts: opts, domains: map[string]place{}, wild: map[string][]wildEntry{}}
}

// Parse reads one file of Envoy's format (one or more YAML documents, each
// a domain) into descriptor definitions, in file order: Loader.Add of a
// new Loader.
func Parse(file string, data []byte) ([]ratelimit.Definition, error) {
	return NewLoader(Options{}).Add(context.Background(), file, data)
}

// Add reads one file of Envoy's format (one or more YAML documents, each a
// domain) into descriptor definitions, in file order. Every problem (bad
// YAML, unknown or unsupported fields, duplicate keys, wrong types,
// duplicate descriptors, a domain an earlier file or document has without
// MergeDomains) is returned as Errors naming the file, line and field.
// When ctx ends first, Add stops and returns ctx.Err().
func (l *Loader) Add(ctx context.Context, file string, data []byte) ([]ratelimit.Definition, error) {
	p := &parser{ctx: ctx, file: file, loader: l}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var defs []ratelimit.Definition
	for doc := 0; ; doc++ {
		var root yaml.Node
		err := dec.Decode(&root)
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			line := 0
			if i := strings.Index(err.Error(), "line "); i >= 0 {
				line, _ = strconv.Atoi(strings.TrimRight(strings.Fields(err.Error()[i+5:])[0], ":"))
			}
			p.errs = append(p.errs, &Error{File: file, Line: line, Message: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")})
			break
		}
		if len(root.Content) == 0 {
			continue
		}
		defs = p.domain(root.Content[0], defs)
		if p.done != nil {
			return nil, p.done
		}
	}
	if len(p.errs) > 0 {
		return nil, p.errs
	}
	return defs, nil
}

func (p *parser) domain(n *yaml.Node, defs []ratelimit.Definition) []ratelimit.Definition {
	f := p.fields(n, "", "domain", "descriptors")
	if f == nil {
		return defs
	}
	domain, ok := p.str(f["domain"], "domain")
	switch {
	case f["domain"] == nil:
		p.fail(n, "domain", "required: the domain the descriptors belong to")
		return defs
	case !ok:
		return defs
	case domain == "":
		p.fail(f["domain"], "domain", "must not be empty")
		return defs
	}
	if first, dup := p.loader.domains[domain]; dup && !p.loader.opts.MergeDomains {
		p.fail(f["domain"], "domain", "duplicate domain %q (first in %s:%d): Envoy's service refuses a domain in two files unless MERGE_DOMAIN_CONFIG=true; --merge-domains merges them as it then does",
			domain, first.file, first.line)
		return defs
	} else if !dup {
		p.loader.domains[domain] = place{p.file, f["domain"].Line}
	}
	p.list(f["descriptors"], "descriptors", domain, nil, inherited{}, &defs)
	return defs
}

// list reads a descriptor list below path (the entries above it). Each
// item's nodes are let go once it is read: a file's tree of nodes is some
// twenty times its size, and the definitions grow while it shrinks.
func (p *parser) list(n *yaml.Node, field, domain string, above []ratelimit.DescriptorEntry, inh inherited, defs *[]ratelimit.Definition) {
	seen := map[ratelimit.DescriptorEntry]int{}
	items := p.seq(n, field)
	for i, item := range items {
		items[i] = nil
		if p.done = p.ctx.Err(); p.done != nil {
			return
		}
		path := fmt.Sprintf("%s[%d]", field, i)
		f := p.fields(item, path, "key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric",
			"value_to_metric", "share_threshold", "quota_mode", "metadata")
		if f == nil {
			continue
		}
		key, ok := p.str(f["key"], join(path, "key"))
		if f["key"] == nil || (ok && key == "") {
			p.fail(item, join(path, "key"), "required: every descriptor has a key")
			continue
		}
		if !ok {
			continue
		}
		value := ""
		if f["value"] != nil {
			if value, ok = p.str(f["value"], join(path, "value")); !ok {
				continue
			}
		}
		e := ratelimit.DescriptorEntry{Key: key, Value: value}
		if line, dup := seen[e]; dup {
			p.fail(item, path, "duplicate descriptor %s (first at line %d): Envoy's service refuses it too", e, line)
			continue
		}
		seen[e] = item.Line
		entries := append(slices.Clone(above), e)
		share := p.boolean(f["share_threshold"], join(path, "share_threshold"))
		wild := strings.Contains(value, "*")
		if share && !wild {
			p.fail(f["share_threshold"], join(path, "share_threshold"), "needs a wildcard value (one holding '*') on this descriptor (value is %q)", value)
		}
		sub := inherited{share: share || inh.share, shareOn: inh.shareOn, off: inh.off}
		if wild {
			p.loader.addWildcard(domain, above, e, place{p.file, item.Line})
			at := f["share_threshold"]
			if at == nil {
				at = f["value"]
			}
			mark := &wildMark{value: value, line: f["value"].Line}
			switch {
			case share && inh.off != nil:
				p.failMixed(at, path, value, true, inh.off)
			case !share && inh.shareOn != nil:
				p.failMixed(at, path, value, false, inh.shareOn)
			case share:
				sub.shareOn = mark
			default:
				sub.off = mark
			}
		}
		shadow := p.boolean(f["shadow_mode"], join(path, "shadow_mode"))
		detailed := p.boolean(f["detailed_metric"], join(path, "detailed_metric"))
		valueMetric := p.boolean(f["value_to_metric"], join(path, "value_to_metric"))
		children := p.seq(f["descriptors"], join(path, "descriptors"))
		rl := f["rate_limit"]
		if rl != nil || len(children) == 0 {
			d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, Enabled: true, WindowSeconds: 1}
			d.Domain, d.Descriptor = domain, entries
			d.Name = ratelimit.DescriptorName(domain, entries)
			d.ShareThreshold = share || inh.share
			d.DetailedMetric, d.ValueToMetric = detailed, valueMetric
			if shadow {
				d.Mode = ratelimit.ModeShadow
			}
			if rl == nil {
				d.Unlimited = true // a leaf without rate_limit: whitelisted
			} else {
				p.rateLimit(rl, join(path, "rate_limit"), &d)
			}
			if d.ShareThreshold && !slices.ContainsFunc(entries, func(e ratelimit.DescriptorEntry) bool { return strings.Contains(e.Value, "*") }) {
				d.ShareThreshold = false
			}
			*defs = append(*defs, d)
		}
		p.list(f["descriptors"], join(path, "descriptors"), domain, entries, sub, defs)
	}
}

// failMixed refuses a wildcard entry whose share_threshold differs from
// that of a wildcard entry above it. Envoy's service shares the counter
// at the entries that set it only; a definition's share_threshold here
// covers every wildcard entry of its path, so importing it would share
// where Envoy does not.
func (p *parser) failMixed(n *yaml.Node, path, value string, share bool, other *wildMark) {
	on, off := "on", "off"
	if !share {
		on, off = off, on
	}
	p.fail(n, join(path, "share_threshold"), "is %s for wildcard value %q but %s for wildcard value %q above it (line %d): "+
		"rlctl's share_threshold covers every wildcard entry of a descriptor's path, so it cannot share one and not the other; set share_threshold alike on both",
		on, value, off, other.value, other.line)
}

func (p *parser) rateLimit(n *yaml.Node, path string, d *ratelimit.Definition) {
	f := p.fields(n, path, "unit", "requests_per_unit", "unlimited", "name", "replaces")
	if f == nil {
		return
	}
	d.Unlimited = p.boolean(f["unlimited"], join(path, "unlimited"))
	if name, ok := p.str(f["name"], join(path, "name")); ok {
		d.LimitName = name
	}
	for i, r := range p.seq(f["replaces"], join(path, "replaces")) {
		rp := fmt.Sprintf("%s[%d]", join(path, "replaces"), i)
		rf := p.fields(r, rp, "name")
		if rf == nil {
			continue
		}
		nn := rf["name"]
		if nn == nil || (nn.Kind == yaml.ScalarNode && (nn.Tag == "!!null" || nn.Value == "")) {
			at := nn
			if at == nil {
				at = r
			}
			p.fail(at, join(rp, "name"), "should not be empty: name the rate limit this one replaces (Envoy's service refuses an empty replaces entry too)")
			continue
		}
		name, ok := p.str(nn, join(rp, "name"))
		if !ok {
			continue
		}
		if name == d.LimitName {
			p.fail(nn, join(rp, "name"), "%q is this rate limit's own name: replaces should not name its own descriptor (Envoy's service refuses it too)", name)
			continue
		}
		d.Replaces = append(d.Replaces, name)
	}
	unitNode := f["unit"]
	if d.Unlimited && unitNode != nil {
		p.fail(unitNode, join(path, "unit"), "should not specify a unit when unlimited is true (descriptor %s): Envoy's service refuses it too", d.Name)
		unitNode = nil
	}
	if unitNode != nil {
		if unit, ok := p.str(unitNode, join(path, "unit")); ok {
			w, known := ratelimit.DescriptorUnitSeconds(unit)
			if !known {
				p.fail(unitNode, join(path, "unit"), "must be one of %s (got %q)", strings.Join(ratelimit.DescriptorUnitNames(), ", "), unit)
			} else {
				d.WindowSeconds = w
			}
		}
	}
	if d.Unlimited {
		if rpu := f["requests_per_unit"]; rpu != nil {
			p.fail(rpu, join(path, "requests_per_unit"), "not allowed with unlimited: true")
		}
		d.WindowSeconds = 1
		return
	}
	if unitNode == nil {
		p.fail(n, join(path, "unit"), "required: second, minute, hour or day")
	}
	rpu := f["requests_per_unit"]
	if rpu == nil {
		p.fail(n, join(path, "requests_per_unit"), "required: the requests admitted per unit")
		return
	}
	var v uint64
	if rpu.Kind != yaml.ScalarNode || rpu.Decode(&v) != nil {
		p.fail(rpu, join(path, "requests_per_unit"), "must be a whole number >= 0 (got %s)", kindName(rpu))
		return
	}
	if v > 1_000_000_000 {
		p.fail(rpu, join(path, "requests_per_unit"), "must be at most 1000000000 (got %d)", v)
		return
	}
	n32 := int(v)
	d.MaxRequests = &n32
}

// addWildcard notes a wildcard entry of the node below above, for
// Warnings.
func (l *Loader) addWildcard(domain string, above []ratelimit.DescriptorEntry, e ratelimit.DescriptorEntry, at place) {
	node := ratelimit.DescriptorName(domain, above)
	if _, ok := l.wild[node]; !ok {
		l.nodes = append(l.nodes, node)
	}
	l.wild[node] = append(l.wild[node], wildcard(e.Key, e.Value, at))
}

func wildcard(key, value string, at place) wildEntry {
	return wildEntry{key: key, value: value, literal: len(value) - strings.Count(value, "*"), at: at}
}

// Warnings are what the files read so far mean otherwise to rlctl than to
// Envoy's service, each naming the file and line: two wildcard values of
// one key at one node that some value matches both, given in an order
// other than rlctl's. Envoy's service tries a node's wildcards in the
// order of its files; rlctl tries the most literal first (the most bytes
// besides '*', then the value's text: pkg/enforce's order), so such a
// value would match the other one.
func (l *Loader) Warnings(ctx context.Context) (Errors, error) {
	var out Errors
	for _, node := range l.nodes {
		ws := l.wild[node]
		// Only wildcards whose text before the first '*' begins the
		// other's can share a value: in the order of those texts, the
		// candidates of each follow it.
		order := make([]int, len(ws))
		prefix := make([]string, len(ws))
		for i, w := range ws {
			order[i] = i
			prefix[i] = w.key + "\x00" + w.value[:strings.IndexByte(w.value, '*')]
		}
		slices.SortFunc(order, func(a, b int) int { return cmp.Or(strings.Compare(prefix[a], prefix[b]), a-b) })
		var pairs [][2]int // config order: [0] first
		for x, i := range order {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for _, j := range order[x+1:] {
				if !strings.HasPrefix(prefix[j], prefix[i]) {
					break
				}
				a, b := min(i, j), max(i, j)
				if ws[a].key == ws[b].key && literalFirst(ws[b], ws[a]) && globsOverlap(ws[a].value, ws[b].value) {
					pairs = append(pairs, [2]int{a, b})
				}
			}
		}
		slices.SortFunc(pairs, func(p, q [2]int) int { return cmp.Or(p[1]-q[1], p[0]-q[0]) })
		for _, p := range pairs {
			a, b := ws[p[0]], ws[p[1]]
			out = append(out, &Error{File: b.at.file, Line: b.at.line, Message: fmt.Sprintf(
				"wildcard %s=%s comes after %s=%s (%s:%d) and some values match both: Envoy's service takes the first in the files, %q; rlctl takes the most literal, %q (docs/envoy.md, \"Matching\")",
				b.key, b.value, a.key, a.value, a.at.file, a.at.line, a.value, b.value)})
		}
	}
	return out, nil
}

// literalFirst reports whether rlctl tries wildcard a before b (of one
// key): more bytes besides '*' first, then the text.
func literalFirst(a, b wildEntry) bool {
	if a.literal != b.literal {
		return a.literal > b.literal
	}
	return a.value < b.value
}

// globsOverlap reports whether some string matches both patterns, where
// '*' matches any run of bytes.
func globsOverlap(p, q string) bool {
	// Cheap refusals first: the text before the first '*' of one must
	// begin the other's, and likewise the text after the last.
	pp, qp := p[:strings.IndexByte(p+"*", '*')], q[:strings.IndexByte(q+"*", '*')]
	if !strings.HasPrefix(pp, qp) && !strings.HasPrefix(qp, pp) {
		return false
	}
	ps, qs := p[strings.LastIndexByte(p, '*')+1:], q[strings.LastIndexByte(q, '*')+1:]
	if !strings.HasSuffix(ps, qs) && !strings.HasSuffix(qs, ps) {
		return false
	}
	// seen[i][j]: p[i:] and q[j:] were tried and share no string.
	seen := make([][]bool, len(p)+1)
	for i := range seen {
		seen[i] = make([]bool, len(q)+1)
	}
	var meet func(i, j int) bool
	meet = func(i, j int) bool {
		if seen[i][j] {
			return false
		}
		var ok bool
		switch {
		case i == len(p) && j == len(q):
			return true
		case i < len(p) && p[i] == '*':
			// p's '*' ends here, or takes q's next byte (or q's '*').
			ok = meet(i+1, j) || (j < len(q) && meet(i, j+1))
		case j < len(q) && q[j] == '*':
			ok = meet(i, j+1) || (i < len(p) && meet(i+1, j))
		case i < len(p) && j < len(q) && p[i] == q[j]:
			ok = meet(i+1, j+1)
		}
		if !ok {
			seen[i][j] = true
		}
		return ok
	}
	return meet(0, 0)
}
