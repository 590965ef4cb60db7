package enforce_test

import (
	"context"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Matching at scale (docs/performance.md "Matching at scale
//"): one decision of one call, with only the definitions it
// matches loaded, and with 10,000 selective definitions of every selective
// kind and 100,000 networks loaded beside them, none of which match it.

// scaleCalls are the decided calls: a user from a client address, on an
// MCP server, invoking a tool on a path, with one Envoy descriptor; and
// the same call made anonymously (network groups gate anonymous callers
// only; a user's address is still looked up, for network quarantine).
func scaleCalls() []struct {
	name  string
	call  enforce.Call
	gates int
} {
	c := enforce.Call{Username: "alice", ClientIP: "198.51.100.7", TargetType: "mcp_server", TargetName: "github",
		Tool: "create_issue", Kind: ratelimit.KindTool, Method: "POST", Path: "/tools/github/mcp",
		Descriptors: &enforce.DescriptorRequest{Domain: "edge", Descriptors: []enforce.Descriptor{
			{Entries: []ratelimit.DescriptorEntry{{Key: "tenant", Value: "acme"}}}}}}
	anon := c
	anon.Username = ""
	// The user's gates: its group by membership, the server, the route
	// tier per IP and per user, the tool glob and the descriptor. The
	// anonymous caller's: its network's group, the server, the tier per
	// IP, the tool glob (keyed by its address) and the descriptor.
	return []struct {
		name  string
		call  enforce.Call
		gates int
	}{{"user", c, 6}, {"anonymous", anon, 5}}
}

func scaleDescriptor(window, limit int, key, value string) ratelimit.Definition {
	d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: window,
		MaxRequests: &limit, Enabled: true}
	d.Domain, d.Descriptor = "edge", []ratelimit.DescriptorEntry{{Key: key, Value: value}}
	d.Name = ratelimit.DescriptorName(d.Domain, d.Descriptor)
	return withID(d)
}

// scaleState is the state of the benchmark: the definitions scaleCall
// matches (one of each selective kind) and, when others, 10,000 more
// selective definitions (2,500 each: route tiers of two path globs, tool
// definitions half exact and half prefix globs, caller definitions of
// network groups, descriptor definitions of the same domain) and 100,000
// network memberships of those groups (IPv4 /16 to /32 under 1-150.x.x.x
// and IPv6 /32 to /64 under 24xx::, so none holds the call's address).
func scaleState(others bool) enforce.State {
	const high = 1_000_000_000
	st := enforce.State{Definitions: append(enforcetest.Sentinels(),
		withID(callerGroup("member", 60, ptr(high), ptr(high))),
		withID(callerGroup("office", 3600, ptr(high), ptr(high))),
		withID(target("mcp_server", "github", 60, high)),
		withID(ratelimit.Definition{Axis: "target", EntityType: "route", Name: "medium", WindowSeconds: 3600,
			Paths: []string{"/tools/*", "/mcp"}, IPMaxRequests: ptr(high), UserMaxRequests: ptr(high), Enabled: true}),
		withID(ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: "github:*", WindowSeconds: 3600,
			MaxRequests: ptr(high), Kinds: []string{ratelimit.KindTool}, ToolScope: ratelimit.ToolScopePrincipalTool, Enabled: true}),
		scaleDescriptor(60, high, "tenant", "acme"),
	), Memberships: []ratelimit.Membership{
		{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"member"}},
		{SubjectType: ratelimit.SubjectNetwork, Subject: "198.51.100.0/24", Groups: []string{"office"}},
	}}
	if !others {
		return st
	}
	const each = 2_500
	for i := range each {
		st.Definitions = append(st.Definitions,
			withID(ratelimit.Definition{Axis: "target", EntityType: "route", Name: fmt.Sprintf("t%d", i), WindowSeconds: 60,
				Paths: []string{fmt.Sprintf("/svc%d/*", i), fmt.Sprintf("/tools%d/*", i)}, IPMaxRequests: ptr(high), UserMaxRequests: ptr(high), Enabled: true}),
			withID(callerGroup(fmt.Sprintf("net%d", i), 60, ptr(high), ptr(high))),
			scaleDescriptor(60, high, "tenant", fmt.Sprintf("t%d", i)))
		tool := fmt.Sprintf("srv%d:tool%d", i, i)
		if i%2 == 1 {
			tool = fmt.Sprintf("github%d:*", i)
		}
		st.Definitions = append(st.Definitions, withID(ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: tool,
			WindowSeconds: 60, MaxRequests: ptr(high), Kinds: []string{ratelimit.KindTool}, Enabled: true}))
	}
	seen := map[netip.Prefix]bool{}
	for i := 0; len(seen) < 100_000; i++ {
		var p netip.Prefix
		if i%2 == 0 {
			p, _ = netip.AddrFrom4([4]byte{byte(1 + i%150), byte(i >> 16), byte(i >> 8), byte(i)}).Prefix(16 + i%17)
		} else {
			p, _ = netip.AddrFrom16([16]byte{0x24, byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i), byte(i * 7)}).Prefix(32 + i%33)
		}
		if !seen[p] {
			seen[p] = true
			st.Memberships = append(st.Memberships, ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: p.String(),
				Groups: []string{fmt.Sprintf("net%d", len(seen)%each)}})
		}
	}
	return st
}

func newScaleEnforcer(tb testing.TB, others bool) *enforce.Enforcer {
	tb.Helper()
	e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(),
		Source: enforcetest.StaticSource(scaleState(others)), SweepInterval: -1, CacheTTL: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	// Settle the snapshot's loading (a reload from the source's watch)
	// and its garbage before anything is timed.
	if err := e.Refresh(context.Background()); err != nil {
		tb.Fatal(err)
	}
	runtime.GC()
	return e
}

// gateView is what a gate says about why it applies, without its counts
// and times.
type gateView struct {
	DefinitionID, Axis, EntityType, Algorithm string
	WindowSeconds                             int
	Limit                                     int64
	MatchedBy, Matched, Dimension             string
	Descriptor                                int
}

func gateViews(d enforce.Decision) []gateView {
	var out []gateView
	for _, g := range d.Gates {
		out = append(out, gateView{g.DefinitionID, g.Axis, g.EntityType, string(g.Algorithm), g.WindowSeconds, g.Limit,
			g.MatchedBy, g.Matched, g.Dimension, g.Descriptor})
	}
	return out
}

// The calls BenchmarkCheckAtScale decides get the same decision, gate for
// gate (definition, why it matched, limit), with the 10,000 other
// definitions and 100,000 networks loaded as without them: the benchmark
// measures the cost of what does not match, nothing else.
func TestScaleDecisionUnchangedByOthers(t *testing.T) {
	t.Parallel()
	none, loaded := newScaleEnforcer(t, false), newScaleEnforcer(t, true)
	for _, c := range scaleCalls() {
		var want []gateView
		for _, e := range []*enforce.Enforcer{none, loaded} {
			d, err := e.Check(context.Background(), c.call)
			if err != nil || !d.Allowed || len(d.Gates) != c.gates {
				t.Fatalf("%s, others loaded %v: decision %+v, %v; want allowed on %d gates", c.name, e == loaded, d, err, c.gates)
			}
			got := gateViews(d)
			if e == none {
				want = got
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: gates with 10,000 others and 100,000 networks:\n%+v\nwant, as with none:\n%+v", c.name, got, want)
			}
		}
		// Why each applies, as status and the gates report it.
		vias := map[string][]string{"user": {"user:alice", "/tools/*", "github:*"},
			"anonymous": {"network:198.51.100.0/24", "/tools/*", "github:*"}}[c.name]
		for _, via := range vias {
			found := false
			for _, g := range want {
				found = found || g.MatchedBy == via || g.Matched == via
			}
			if !found {
				t.Errorf("%s: no gate matched by %q in %+v", c.name, via, want)
			}
		}
	}
}

// BenchmarkCheckAtScale: one decision (Check on the in-memory counter
// store, so the figure is matching and counting in process, no database)
// of each of scaleCalls, with nothing else loaded (others=none) and with
// 10,000 selective definitions and 100,000 networks that do not match it
// (others=10000+networks=100000).
func BenchmarkCheckAtScale(b *testing.B) {
	for _, o := range []struct {
		name   string
		others bool
	}{{"others=none", false}, {"others=10000+networks=100000", true}} {
		e := newScaleEnforcer(b, o.others)
		for _, c := range scaleCalls() {
			b.Run(o.name+"/"+c.name, func(b *testing.B) {
				ctx := context.Background()
				runtime.GC()
				b.ReportAllocs()
				for b.Loop() {
					if d, _ := e.Check(ctx, c.call); !d.Allowed || len(d.Gates) != c.gates {
						b.Fatalf("decision %+v", d)
					}
				}
			})
		}
	}
}
