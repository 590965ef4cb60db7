package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/internal/envoyconf"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Units of a limit override, as Envoy's protocol names them.
var overrideUnits = []string{"SECOND", "MINUTE", "HOUR", "DAY"}

// Request is one generated ShouldRateLimit request, sent alike to both
// services.
type Request struct {
	Seq, Index  int
	Domain      string
	HitsAddend  uint32 // the request's (0: Envoy's default of 1)
	Descriptors []Descriptor
}

// Descriptor is one descriptor of a Request.
type Descriptor struct {
	Entries []ratelimit.DescriptorEntry
	// HitsAddend is the descriptor's own hits_addend (nil: the request's).
	HitsAddend *uint32
	Limit      *Override
}

// Override is a per-descriptor limit override.
type Override struct {
	RequestsPerUnit uint32
	Unit            string
}

func (d Descriptor) String() string {
	var b strings.Builder
	for i, e := range d.Entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.Key)
		if e.Value != "" {
			b.WriteByte('=')
			b.WriteString(e.Value)
		}
	}
	if d.HitsAddend != nil {
		fmt.Fprintf(&b, " hits_addend=%d", *d.HitsAddend)
	}
	if d.Limit != nil {
		fmt.Fprintf(&b, " limit=%d/%s", d.Limit.RequestsPerUnit, d.Limit.Unit)
	}
	return b.String()
}

func (r Request) String() string {
	parts := make([]string, len(r.Descriptors))
	for i, d := range r.Descriptors {
		parts[i] = "[" + d.String() + "]"
	}
	return fmt.Sprintf("domain=%s hits_addend=%d %s", r.Domain, r.HitsAddend, strings.Join(parts, " "))
}

// Config is what the generator draws from: the definitions of a
// configuration directory, by domain, as rlctl import reads them.
type Config struct {
	Domains []string // sorted
	Defs    map[string][]ratelimit.Definition
	trees   map[string]*node
}

// loadConfig reads the configuration directory as `rlctl import
// envoy-ratelimit --merge-domains` does (every *.yaml and *.yml file, in
// name order).
func loadConfig(dir string) (*Config, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	l := envoyconf.NewLoader(envoyconf.Options{MergeDomains: true})
	c := &Config{Defs: map[string][]ratelimit.Definition{}}
	for _, e := range entries {
		if ext := strings.ToLower(filepath.Ext(e.Name())); e.IsDir() || (ext != ".yaml" && ext != ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		defs, err := l.Add(context.Background(), e.Name(), data)
		if err != nil {
			return nil, err
		}
		for _, d := range defs {
			c.Defs[d.Domain] = append(c.Defs[d.Domain], d)
		}
	}
	if len(c.Defs) == 0 {
		return nil, fmt.Errorf("%s: no descriptors in any *.yaml or *.yml file", dir)
	}
	c.trees = map[string]*node{}
	for d, defs := range c.Defs {
		c.Domains = append(c.Domains, d)
		c.trees[d] = newTree(defs)
	}
	slices.Sort(c.Domains)
	return c, nil
}

// Generator makes the seeded sequences of requests.
type Generator struct {
	Seed uint64
	Cfg  *Config
	// MaxRequests bounds a sequence's requests (at least 2).
	MaxRequests int
}

// unknownDomain is a domain no configuration has: both services answer
// its descriptors OK without a limit.
const unknownDomain = "rlenvoy-diff-unknown"

// Sequence is sequence number seq: the same for a seed and a
// configuration, whatever other sequences were made before it. A
// sequence is one domain, a pool of one to four descriptors (so that
// requests meet on counters) and the requests drawn from it.
func (g *Generator) Sequence(seq int) []Request {
	r := rand.New(rand.NewPCG(g.Seed, uint64(seq)))
	domain := g.Cfg.Domains[r.IntN(len(g.Cfg.Domains))]
	defs := g.Cfg.Defs[domain]
	known := domain
	if r.IntN(40) == 0 {
		known = unknownDomain
	}
	pool := make([]Descriptor, 1+r.IntN(4))
	for i := range pool {
		pool[i] = g.descriptor(r, seq, defs)
	}
	n := 2 + r.IntN(max(g.MaxRequests-1, 1))
	out := make([]Request, n)
	for i := range out {
		req := Request{Seq: seq, Index: i, Domain: known}
		switch x := r.IntN(20); {
		case x < 13: // 0: Envoy's default, one hit
		case x < 17:
			req.HitsAddend = 1
		case x < 19:
			req.HitsAddend = uint32(2 + r.IntN(3))
		default:
			req.HitsAddend = []uint32{5, 10, 25}[r.IntN(3)]
		}
		// Distinct descriptors of the pool, in a random order; now and
		// then one twice (a duplicate, which may carry another
		// hits_addend or override).
		picks := r.Perm(len(pool))[:1+r.IntN(len(pool))]
		if r.IntN(8) == 0 {
			picks = append(picks, picks[r.IntN(len(picks))])
		}
		for _, p := range picks {
			d := pool[p]
			d.Entries = slices.Clone(d.Entries)
			if r.IntN(5) == 0 {
				h := []uint32{0, 1, 2, 3, 5}[r.IntN(5)]
				d.HitsAddend = &h
			}
			if r.IntN(12) == 0 {
				d.Limit = &Override{RequestsPerUnit: []uint32{0, 1, 2, 3, 5, 10}[r.IntN(6)], Unit: overrideUnits[r.IntN(len(overrideUnits))]}
			}
			req.Descriptors = append(req.Descriptors, d)
		}
		out[i] = req
	}
	return out
}

// descriptor makes one descriptor of a sequence's pool from a random
// definition of the domain: its entries with key-only values and
// wildcards filled in (values of the sequence's own, so that sequences
// do not share counters), now and then changed so that it matches
// another node or none.
func (g *Generator) descriptor(r *rand.Rand, seq int, defs []ratelimit.Definition) Descriptor {
	def := defs[r.IntN(len(defs))]
	var d Descriptor
	token := func() string { return fmt.Sprintf("s%d-%d", seq, r.IntN(3)) }
	for _, e := range def.Descriptor {
		v := e.Value
		switch {
		case v == "":
			v = token()
		case strings.Contains(v, "*"):
			if r.IntN(10) == 0 {
				v = "nomatch-" + token() // a value the wildcard does not match
			} else {
				v = strings.ReplaceAll(v, "*", token())
			}
		case r.IntN(12) == 0:
			v = token() // a key-only sibling, or nothing
		}
		d.Entries = append(d.Entries, ratelimit.DescriptorEntry{Key: e.Key, Value: v})
	}
	switch x := r.IntN(30); {
	case x == 0 && len(d.Entries) > 1:
		d.Entries = d.Entries[:len(d.Entries)-1] // shallower than the configuration
	case x == 1:
		d.Entries = append(d.Entries, ratelimit.DescriptorEntry{Key: "extra", Value: token()}) // deeper
	case x == 2:
		d.Entries = []ratelimit.DescriptorEntry{{Key: "rlenvoy-diff-unknown", Value: token()}} // a key the domain does not have
	}
	return d
}

// probes are one request per domain that has a limit, of one descriptor
// with hits_addend 0 (it counts nothing), whose answer carries that limit
// once a server has loaded the domain's configuration.
func (c *Config) probes() []Request {
	var out []Request
	for _, dom := range c.Domains {
		defs := slices.Clone(c.Defs[dom])
		slices.SortFunc(defs, func(a, b ratelimit.Definition) int { return cmp.Compare(a.Name, b.Name) })
		for _, def := range defs {
			if def.Unlimited || def.Mode == ratelimit.ModeShadow {
				continue
			}
			zero := uint32(0)
			d := Descriptor{HitsAddend: &zero}
			for _, e := range def.Descriptor {
				if e.Value == "" {
					e.Value = "probe"
				}
				e.Value = strings.ReplaceAll(e.Value, "*", "probe")
				d.Entries = append(d.Entries, e)
			}
			out = append(out, Request{Seq: -1, Domain: dom, Descriptors: []Descriptor{d}})
			break
		}
	}
	return out
}

// node is one node of a domain's descriptor tree, as Envoy's service
// holds it: children by exact entry, by key alone, and wildcard children
// in the order of the files.
type node struct {
	exact   map[ratelimit.DescriptorEntry]*node
	keyOnly map[string]*node
	wild    []wildChild
	def     *ratelimit.Definition
}

type wildChild struct {
	key, pattern string
	n            *node
}

func newNode() *node {
	return &node{exact: map[ratelimit.DescriptorEntry]*node{}, keyOnly: map[string]*node{}}
}

func newTree(defs []ratelimit.Definition) *node {
	root := newNode()
	for i := range defs {
		n := root
		for _, e := range defs[i].Descriptor {
			var next *node
			switch {
			case e.Value == "":
				if next = n.keyOnly[e.Key]; next == nil {
					next = newNode()
					n.keyOnly[e.Key] = next
				}
			case strings.Contains(e.Value, "*"):
				for _, w := range n.wild {
					if w.key == e.Key && w.pattern == e.Value {
						next = w.n
					}
				}
				if next == nil {
					next = newNode()
					n.wild = append(n.wild, wildChild{key: e.Key, pattern: e.Value, n: next})
				}
			default:
				if next = n.exact[e]; next == nil {
					next = newNode()
					n.exact[e] = next
				}
			}
			n = next
		}
		n.def = &defs[i]
	}
	return root
}

// match is the definition Envoy's service matches a descriptor's entries
// to in domain (its config_impl.go, GetLimit: at each entry the exact
// entry, else the first wildcard of the files that matches, else the key
// alone; no backtracking; the match is the node of the last entry), or
// nil. Only the classification of differences uses it: rlapi's matching
// is pkg/enforce's. counterKey is the entries Envoy's service keys the
// counter by (a wildcard's pattern for a value matched under
// share_threshold).
func (c *Config) match(domain string, entries []ratelimit.DescriptorEntry) (def *ratelimit.Definition, counterKey []ratelimit.DescriptorEntry) {
	n := c.trees[domain]
	if n == nil {
		return nil, nil
	}
	var patterns []string
	for i, e := range entries {
		next, pattern := n.exact[e], ""
		if next == nil {
			for _, w := range n.wild {
				if w.key == e.Key && ratelimit.GlobMatch(w.pattern, e.Value) {
					next, pattern = w.n, w.pattern
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
		patterns = append(patterns, pattern)
		if i == len(entries)-1 {
			def = next.def
		}
		n = next
	}
	if def == nil {
		return nil, nil
	}
	counterKey = slices.Clone(entries)
	if def.ShareThreshold {
		for i, p := range patterns {
			if p != "" {
				counterKey[i].Value = p
			}
		}
	}
	return def, counterKey
}
