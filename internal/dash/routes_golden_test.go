package dash

import (
	"io"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The Limits view with route tiers and tool globs: the table
// and the detail pane of a tier (methods, exempt, every path, its
// dimensions) and of a tool glob (kinds, tool scope). The scenes join
// TestGolden's, TestColorFits' and TestNarrowAndTiny's (kept in this file
// so that scenes added elsewhere merge without a conflict).
func init() {
	scenes = append(scenes,
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"limits_routes", func(t *testing.T, w, h int) Model { return loadedRoutes(t, w, h) }},
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"limits_routes_detail", func(t *testing.T, w, h int) Model {
			return apply(t, loadedRoutes(t, w, h), steps(typed("jjj<enter>"), answer(resDetail, func(r reply) tea.Msg {
				return detailMsg{reply: r, id: "target:route:critical:60", countersOK: true,
					counters: []client.Counter{{Key: "ct.sw|60|team:acme-corp|route:critical", Count: 7, WindowSeconds: 60, Algorithm: "sliding_window",
						ExpiresAt: clock.Add(50 * time.Second)}}}
			})))
		}},
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"limits_tools_detail", func(t *testing.T, w, h int) Model {
			return apply(t, loadedRoutes(t, w, h), steps(typed("jj<enter>"), answer(resDetail, func(r reply) tea.Msg {
				return detailMsg{reply: r, id: "target:mcp_tool:github:*:3600", countersOK: true}
			})))
		}},
	)
}

// routeDefinitions are an endpoint tier for critical paths (10/min), exempt
// health and login paths, a caller group for everyone per address, and
// tool globs with kinds and scopes: the shapes of docs/examples.
func routeDefinitions() []ratelimit.Definition {
	defs := []ratelimit.Definition{
		{Axis: "target", EntityType: "route", Name: "critical", WindowSeconds: 60, Description: "auth endpoints, 10/min, no burst",
			Paths: []string{"/auth/email/*", "/auth/sso/*", "/auth/password/reset", "/auth/mfa/*", "/auth/device/*"}, Methods: []string{"POST", "PUT"},
			Algorithm: ratelimit.AlgorithmSlidingWindow, IPMaxRequests: ptr(10), UserMaxRequests: ptr(10), TeamMaxRequests: ptr(10),
			Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "target", EntityType: "route", Name: "public", WindowSeconds: 60, Paths: []string{"/api/health", "/docs", "/openapi.json"},
			Exempt: true, Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "caller", EntityType: "group", Name: "per-ip", WindowSeconds: 60, Everyone: true, Per: ratelimit.PerIP,
			UserMaxRequests: ptr(60), AgentMaxRequests: ptr(60), Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "target", EntityType: "mcp_tool", Name: "github:*", WindowSeconds: 3600, MaxRequests: ptr(5),
			Kinds: []string{"tool", "prompt"}, ToolScope: ratelimit.ToolScopePrincipal, Enabled: true, Mode: "enforce", Version: 2},
		{Axis: "target", EntityType: "mcp_tool", Name: "*:delete_*", WindowSeconds: 3600, MaxRequests: ptr(20),
			ToolScope: ratelimit.ToolScopeTool, Enabled: true, Mode: "enforce", Version: 1},
	}
	for i := range defs {
		defs[i].ID = defs[i].Key()
	}
	return defs
}

func loadedRoutes(t *testing.T, w, h int) Model {
	t.Helper()
	m := loaded(t, w, h)
	m.limits.SetDefinitions(routeDefinitions())
	return m
}

// The detail pane says what each route and tool definition selects: an
// exempt route's paths and every method, a skill's every kind and global
// scope, and nothing for a definition of neither kind.
func TestMatchLines(t *testing.T) {
	t.Parallel()
	st := NewStyles(io.Discard, false)
	for _, c := range []struct {
		d    ratelimit.Definition
		want string
	}{
		{ratelimit.Definition{EntityType: "route", Paths: []string{"/api/health", "/docs"}, Exempt: true},
			"methods every method  exempt yes\npaths (2):\n  /api/health  /docs"},
		{ratelimit.Definition{EntityType: "a2a_skill", Name: "/agent:book_*"}, "kinds every kind  tool scope global"},
		{ratelimit.Definition{EntityType: "mcp_tool", Name: "srv:*", Kinds: []string{"completion"}, ToolScope: "principal_tool"},
			"kinds completion  tool scope principal_tool"},
		{ratelimit.Definition{EntityType: "group", Per: "team"}, ""},
	} {
		if got := strings.Join(matchLines(&st, c.d, 80), "\n"); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.d.EntityType, c.d.Name, got, c.want)
		}
	}
}
