package dash

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// manyDefinitions makes n definitions of every axis and entity type.
func manyDefinitions(n int) []ratelimit.Definition {
	axes := []string{"caller", "caller", "target", "caller_target"}
	entities := map[string][]string{
		"caller":        {"group"},
		"target":        {"mcp_server", "a2a_agent", "mcp_tool", "server_group"},
		"caller_target": {"group"},
	}
	defs := make([]ratelimit.Definition, n)
	for i := range defs {
		axis := axes[i%len(axes)]
		es := entities[axis]
		d := ratelimit.Definition{
			Axis: axis, EntityType: es[i/len(axes)%len(es)], Name: fmt.Sprintf("team-%05d", i),
			WindowSeconds: []int{60, 3600, 86400}[i%3], Enabled: i%7 != 0, Mode: []string{"enforce", "shadow"}[i%5/4],
			Description: fmt.Sprintf("limits for team %d", i),
		}
		if axis == "target" {
			d.MaxRequests = ptr(100 + i)
		} else {
			d.UserMaxRequests = ptr(60 + i%100)
			d.AgentMaxRequests = ptr(30 + i%50)
		}
		d.ID = d.Key()
		defs[i] = d
	}
	return defs
}

// manyMemberships makes n memberships, each in two groups.
func manyMemberships(n int) []ratelimit.Membership {
	ms := make([]ratelimit.Membership, n)
	for i := range ms {
		ms[i] = ratelimit.Membership{
			SubjectType: []string{"user", "client"}[i%2], Subject: fmt.Sprintf("subject-%06d", i),
			Groups: []string{fmt.Sprintf("team-%05d", i%10000), "everyone"}, UpdatedAt: at(-time.Duration(i) * time.Second),
		}
	}
	return ms
}

func limitsWith(tb testing.TB, defs []ratelimit.Definition) limitsView {
	tb.Helper()
	keys, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	v := newLimitsView(&keys, &styles, fixedNow)
	v.SetSize(120, 36)
	v.SetDefinitions(defs)
	return v
}

// filterQueries are typical keystrokes' worth of filter: free text,
// narrowing, field terms, no match.
var filterQueries = []string{"t", "te", "team-0", "team-04", "team-042", "shadow", "axis:target enabled:no", "zzz", ""}

// BenchmarkFilter10k measures one filter of 10,000 definitions, what each
// keystroke in the filter costs (the budget is 50 ms).
func BenchmarkFilter10k(b *testing.B) {
	v := limitsWith(b, manyDefinitions(10_000))
	i := 0
	for b.Loop() {
		v.list.setQuery(filterQueries[i%len(filterQueries)])
		i++
	}
}

// BenchmarkFilter100kMembershipRows filters the Members view of 100,000
// memberships (200,000 subject-group rows).
func BenchmarkFilter100kMembershipRows(b *testing.B) {
	keys, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	v := newMembersView(&keys, &styles, fixedNow)
	v.SetSize(120, 36)
	v.SetMemberships(manyMemberships(100_000))
	qs := []string{"s", "subject-0", "subject-04", "group:team-00042", "everyone", "zzz", ""}
	i := 0
	for b.Loop() {
		v.list.setQuery(qs[i%len(qs)])
		i++
	}
}

// BenchmarkLoadDefinitions10k is a refresh: replace, index and sort 10,000
// definitions.
func BenchmarkLoadDefinitions10k(b *testing.B) {
	defs := manyDefinitions(10_000)
	v := limitsWith(b, defs)
	for b.Loop() {
		v.SetDefinitions(defs)
	}
}

// BenchmarkLoadMemberships100k is a refresh of the Members view.
func BenchmarkLoadMemberships100k(b *testing.B) {
	ms := manyMemberships(100_000)
	keys, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	v := newMembersView(&keys, &styles, fixedNow)
	v.SetSize(120, 36)
	for b.Loop() {
		v.SetMemberships(ms)
	}
}

// BenchmarkSwapMemberships100k is what a refresh of 100,000 memberships
// costs the UI goroutine once the command has indexed them.
func BenchmarkSwapMemberships100k(b *testing.B) {
	keys, styles := DefaultKeyMap(), NewStyles(io.Discard, false)
	v := newMembersView(&keys, &styles, fixedNow)
	v.SetSize(120, 36)
	x := v.indexMemberships()(manyMemberships(100_000))
	for b.Loop() {
		v.list.SetIndexed(x)
	}
}

// BenchmarkView10k renders the whole screen over 10,000 definitions: only
// the visible rows cost anything.
func BenchmarkView10k(b *testing.B) {
	m := loaded(b, 120, 40)
	m = update(b, m, definitionsMsg{reply: ok(m, resDefinitions), defs: manyDefinitions(10_000)})
	for b.Loop() {
		_ = m.View()
	}
}

// TestFilter10kFast holds the filter to its budget: every query over
// 10,000 definitions well under 50 ms (the race detector slows code about
// tenfold, so the budget grows with it).
func TestFilter10kFast(t *testing.T) {
	if testing.Short() {
		t.Skip("timing test")
	}
	budget := 50 * time.Millisecond
	if raceEnabled {
		budget *= 10
	}
	v := limitsWith(t, manyDefinitions(10_000))
	for _, q := range filterQueries {
		// The best of three, so a pause of a busy machine does not count.
		best := time.Hour
		for range 3 {
			v.list.setQuery("reset")
			start := time.Now()
			v.list.setQuery(q)
			best = min(best, time.Since(start))
		}
		if best > budget {
			t.Errorf("filter %q over 10,000 definitions took %s, budget %s", q, best, budget)
		}
	}
	v.list.setQuery("team-04211")
	if v.list.Len() != 1 {
		t.Errorf("team-04211 matches %d rows, want 1", v.list.Len())
	}
}
