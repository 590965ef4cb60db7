package plan

import (
	"fmt"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// candidates counts the patterns a lookup of name tests: the exact
// entries and the globs of the buckets it visits.
func (x *patternIndex[T]) candidates(name string) int {
	n := len(x.exact[name])
	for _, l := range x.lens {
		if l > len(name) {
			break
		}
		n += len(x.globs[name[:l]])
	}
	return n
}

// selectiveSnapshot indexes one matching route and tool glob plus extra
// definitions that do not match /tools/github/mcp or github:create_issue.
func selectiveSnapshot(extra int) *Index {
	high := 1_000_000_000
	defs := map[string]ratelimit.Definition{}
	add := func(d ratelimit.Definition) { d.ID = d.Key(); defs[d.ID] = d }
	add(ratelimit.Definition{Axis: "target", EntityType: "route", Name: "medium", WindowSeconds: 3600,
		Paths: []string{"/tools/*", "/mcp"}, UserMaxRequests: &high, Enabled: true})
	add(ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: "github:*", WindowSeconds: 3600,
		MaxRequests: &high, Enabled: true})
	for i := range extra / 2 {
		add(ratelimit.Definition{Axis: "target", EntityType: "route", Name: fmt.Sprintf("t%d", i), WindowSeconds: 60,
			Paths: []string{fmt.Sprintf("/svc%d/*", i), fmt.Sprintf("/tools%d/*", i), fmt.Sprintf("/svc%d/v1", i)}, UserMaxRequests: &high, Enabled: true})
		name := fmt.Sprintf("srv%d:tool%d", i, i)
		if i%2 == 1 {
			name = fmt.Sprintf("github%d:*", i)
		}
		add(ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: name, WindowSeconds: 60, MaxRequests: &high, Enabled: true})
	}
	s := NewIndex(defs)
	return &s
}

// TestMatchingCostDoesNotGrowWithOtherDefinitions: with 10,000 route and
// tool definitions that cannot match, a lookup tests no more patterns
// than with none loaded. The glob bucketed under "/tools" (the prefix of
// /tools<i>/*) is tested: it shares the literal prefix; the 5,000 others
// are never looked at.
func TestMatchingCostDoesNotGrowWithOtherDefinitions(t *testing.T) {
	t.Parallel()
	for _, extra := range []int{0, 10_000} {
		s := selectiveSnapshot(extra)
		routes, _ := s.Routes.Match("POST", "/tools/github/mcp")
		var tools []string
		s.tools[ratelimit.EntityMCPTool].match("github:create_issue", func(p string, _ *ratelimit.Definition) { tools = append(tools, p) })
		if len(routes) != 1 || routes[0].Pattern != "/tools/*" || fmt.Sprint(tools) != "[github:*]" {
			t.Fatalf("%d others: routes %+v, tools %v", extra, routes, tools)
		}
		rc := s.Routes.patterns.candidates("/tools/github/mcp")
		tc := s.tools[ratelimit.EntityMCPTool].candidates("github:create_issue")
		if rc > 1 || tc > 1 {
			t.Errorf("%d other definitions: a lookup tests %d route and %d tool patterns, want 1 each", extra, rc, tc)
		}
	}
}

// BenchmarkMatchSelective is the matching alone (routes and tools) of
// one call, with no other definition and with 10,000 others.
func BenchmarkMatchSelective(b *testing.B) {
	for _, extra := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("others=%d", extra), func(b *testing.B) {
			s := selectiveSnapshot(extra)
			tools := s.tools[ratelimit.EntityMCPTool]
			b.ReportAllocs()
			for b.Loop() {
				m, _ := s.Routes.Match("POST", "/tools/github/mcp")
				n := 0
				tools.match("github:create_issue", func(string, *ratelimit.Definition) { n++ })
				if len(m) != 1 || n != 1 {
					b.Fatal("no match")
				}
			}
		})
	}
}
