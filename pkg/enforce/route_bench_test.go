package enforce_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// BenchmarkCheckSelectiveDefinitions: one decision that matches one route
// tier (per IP and per user) and one tool glob (principal_tool), with no
// other definition loaded, and with 10,000 more route and tool definitions
// that do not match it (5,000 routes of two patterns each, /svc<i>/* and
// /svc<i>/v<i>; 2,500 exact tool names and 2,500 tool globs srv<i>:*) —
// docs/performance.md, "The decision's own work". On the in-memory counter
// store, so the figure is the decision's own cost.
func BenchmarkCheckSelectiveDefinitions(b *testing.B) {
	for _, extra := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("others=%d", extra), func(b *testing.B) {
			const high = 1_000_000_000
			tier := ratelimit.Definition{Axis: "target", EntityType: "route", Name: "medium", WindowSeconds: 3600,
				Paths: []string{"/tools/*", "/mcp"}, IPMaxRequests: ptr(high), UserMaxRequests: ptr(high), Enabled: true}
			glob := ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: "github:*", WindowSeconds: 3600,
				MaxRequests: ptr(high), ToolScope: ratelimit.ToolScopePrincipalTool, Enabled: true}
			defs := append(enforcetest.Sentinels(), withID(tier), withID(glob))
			for i := range extra / 2 {
				if i%2 == 0 {
					defs = append(defs, withID(ratelimit.Definition{Axis: "target", EntityType: "route", Name: fmt.Sprintf("t%d", i),
						WindowSeconds: 60, Paths: []string{fmt.Sprintf("/svc%d/*", i), fmt.Sprintf("/svc%d/v%d", i, i)},
						UserMaxRequests: ptr(high), Enabled: true}))
					defs = append(defs, withID(ratelimit.Definition{Axis: "target", EntityType: "route", Name: fmt.Sprintf("u%d", i),
						WindowSeconds: 60, Paths: []string{fmt.Sprintf("/api%d/*", i), fmt.Sprintf("/tools%d/*", i)},
						IPMaxRequests: ptr(high), Enabled: true}))
					continue
				}
				defs = append(defs, withID(ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: fmt.Sprintf("srv%d:tool%d", i, i),
					WindowSeconds: 60, MaxRequests: ptr(high), Enabled: true}))
				defs = append(defs, withID(ratelimit.Definition{Axis: "target", EntityType: "mcp_tool", Name: fmt.Sprintf("github%d:*", i),
					WindowSeconds: 60, MaxRequests: ptr(high), Enabled: true}))
			}
			e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(),
				Source: enforcetest.StaticSource(enforce.State{Definitions: defs}), SweepInterval: -1, CacheTTL: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			call := enforce.Call{Username: "alice", ClientIP: "198.51.100.7", TargetType: "mcp_server", TargetName: "github",
				Tool: "create_issue", Method: "POST", Path: "/tools/github/mcp"}
			ctx := context.Background()
			d, _ := e.Check(ctx, call)
			if !d.Allowed || len(d.Gates) != 3 {
				b.Fatalf("decision %+v, want allowed on 3 gates", d)
			}
			b.ReportAllocs()
			for b.Loop() {
				if d, _ := e.Check(ctx, call); !d.Allowed {
					b.Fatal("denied")
				}
			}
		})
	}
}
