package dash

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/ansi"
	"github.com/muesli/termenv"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// scenes are the screens kept as golden files, each built from the fixture
// data at a fixed clock.
var scenes = []struct {
	name  string
	build func(t *testing.T, w, h int) Model
}{
	{"loading", func(t *testing.T, w, h int) Model { return newModel(t, newFakeAPI(), w, h) }},
	{"error", func(t *testing.T, w, h int) Model {
		return apply(t, newModel(t, newFakeAPI(), w, h), steps(send(tickMsg(clock)), failWith(resDefinitions, errRefused)))
	}},
	{"limits", func(t *testing.T, w, h int) Model { return loaded(t, w, h) }},
	{"limits_filter", func(t *testing.T, w, h int) Model { return apply(t, loaded(t, w, h), typed("/develop")) }},
	{"limits_detail", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), steps(typed("j<enter>"), answer(resDetail, func(r reply) tea.Msg {
			return detailMsg{reply: r, id: "caller:group:developers:60", memberships: fixtureMemberships()[:2], countersOK: true,
				counters: []client.Counter{{Key: "rl:caller:user:alice:60", Count: 12, WindowSeconds: 60, ExpiresAt: clock.Add(30 * time.Second)}}}
		})))
	}},
	{"limits_confirm", func(t *testing.T, w, h int) Model { return apply(t, loaded(t, w, h), typed("je")) }},
	{"limits_algorithms", func(t *testing.T, w, h int) Model { return loadedAlgorithms(t, w, h) }},
	{"limits_algorithms_detail", func(t *testing.T, w, h int) Model {
		return apply(t, loadedAlgorithms(t, w, h), steps(typed("jjjjjj<enter>"), answer(resDetail, func(r reply) tea.Msg {
			return detailMsg{reply: r, id: "target:mcp_server:github-mcp:60", countersOK: true,
				counters: []client.Counter{{Key: "t.tb|target:mcp_server:github-mcp:60", WindowSeconds: 60, Algorithm: "token_bucket",
					FullAt: ptr(clock.Add(3 * time.Second)), Tokens: ptr(int64(47)), Burst: 50, ExpiresAt: clock.Add(3 * time.Second)}}}
		})))
	}},
	{"limits_edit", func(t *testing.T, w, h int) Model { return apply(t, loadedAlgorithms(t, w, h), typed("jc")) }},
	{"limits_edit_invalid", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), typed("jjjjjjct<tab><backspace><backspace><backspace>lots<tab>0<enter>"))
	}},
	{"limits_edit_confirm", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), typed("jjjjjjct<tab><backspace><backspace><backspace>600<tab>50<enter>"))
	}},
	{"members", func(t *testing.T, w, h int) Model { return apply(t, loaded(t, w, h), typed("2")) }},
	{"quarantine", func(t *testing.T, w, h int) Model { return apply(t, loaded(t, w, h), typed("3")) }},
	{"quarantine_form", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), typed("3ac<tab>leaked-key<tab>incident 7<tab>2h"))
	}},
	{"quarantine_form_network_invalid", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), typed("3an<tab>10.1.2.3<tab>scanner<tab>2h<enter>"))
	}},
	{"quarantine_confirm", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), typed("3ac<tab>leaked-key<tab>incident 7<tab>2h<enter>"))
	}},
	{"quarantine_refused", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), steps(typed("3"), mutationFailed("quarantine client:gateway-health", errAdminQuarantine)))
	}},
	{"admins", func(t *testing.T, w, h int) Model { return apply(t, loaded(t, w, h), typed("4")) }},
	{"audit", func(t *testing.T, w, h int) Model { return apply(t, loaded(t, w, h), typed("5")) }},
	{"help", func(t *testing.T, w, h int) Model { return apply(t, loaded(t, w, h), typed("?")) }},
	{"connection_lost", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), steps(typed("r"), failWith(resDefinitions, errRefused)))
	}},
	{"viewer", func(t *testing.T, w, h int) Model {
		return apply(t, loaded(t, w, h), steps(failWith(resRole, errViewer), typed("3")))
	}},
}

var sizes = [][2]int{{80, 24}, {120, 40}}

// loadedAlgorithms is loaded with the developers group a token bucket with
// an agent burst, partners a sliding window and github-mcp a token bucket
// of burst 50 with lease never and fail policy degrade.
func loadedAlgorithms(t *testing.T, w, h int) Model {
	t.Helper()
	defs := fixtureDefinitions()
	defs[0].Algorithm, defs[0].AgentBurst = ratelimit.AlgorithmTokenBucket, ptr(10)
	defs[1].Algorithm = ratelimit.AlgorithmSlidingWindow
	defs[3].Algorithm, defs[3].Burst = ratelimit.AlgorithmTokenBucket, ptr(50)
	defs[3].Lease = ratelimit.LeaseNever // shown in the detail pane
	defs[3].FailPolicy = ratelimit.FailPolicyDegrade
	m := loaded(t, w, h)
	m.limits.SetDefinitions(defs)
	return m
}

// TestGolden compares each scene, rendered without colour, with its golden
// file. Run with -update to rewrite them after a deliberate change.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, sc := range scenes {
		for _, sz := range sizes {
			name := fmt.Sprintf("%s_%dx%d", sc.name, sz[0], sz[1])
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				got := sc.build(t, sz[0], sz[1]).View()
				wantFits(t, got, sz[0], sz[1])
				if strings.Contains(got, "\x1b") {
					t.Error("escape sequences without colour")
				}
				path := filepath.Join("testdata", name+".golden")
				if *updateGolden {
					if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -run TestGolden -update)", err)
				}
				if got+"\n" != string(want) {
					t.Errorf("%s differs (go test -run TestGolden -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			})
		}
	}
}

// TestColorFits renders every scene with colour: the escape sequences must
// not change the layout.
func TestColorFits(t *testing.T) {
	t.Parallel()
	r := lipgloss.NewRenderer(io.Discard)
	r.SetColorProfile(termenv.TrueColor)
	colored := newStyles(r, true)
	plain := NewStyles(io.Discard, false)
	for _, sc := range scenes {
		for _, sz := range sizes {
			m := sc.build(t, sz[0], sz[1])
			restyle(&m, &colored)
			got := m.View()
			if !strings.Contains(got, "\x1b[") {
				t.Errorf("%s: no colour with a colour profile", sc.name)
			}
			wantFits(t, got, sz[0], sz[1])
			restyle(&m, &plain)
			if ansi.Strip(got) != m.View() {
				t.Errorf("%s %dx%d: the text differs with colour:\n%s\n---\n%s", sc.name, sz[0], sz[1], ansi.Strip(got), m.View())
			}
		}
	}
}

// restyle swaps the styles every component points to.
func restyle(m *Model, st *Styles) {
	*m.styles = *st
}

// TestNarrowAndTiny: every scene fits any size, down to absurdly small.
func TestNarrowAndTiny(t *testing.T) {
	t.Parallel()
	for _, sc := range scenes {
		for _, sz := range [][2]int{{60, 15}, {100, 30}, {200, 60}, {20, 5}, {1, 1}} {
			wantFits(t, sc.build(t, sz[0], sz[1]).View(), sz[0], sz[1])
		}
	}
}

// wantFits fails when a line is wider than the terminal or there are more
// lines than it has.
func wantFits(t *testing.T, screen string, w, h int) {
	t.Helper()
	lines := strings.Split(screen, "\n")
	if len(lines) > h {
		t.Errorf("%d lines on a terminal of %d", len(lines), h)
	}
	for i, l := range lines {
		if n := lipgloss.Width(l); n > w {
			t.Errorf("line %d is %d cells wide on a terminal of %d: %q", i+1, n, w, l)
		}
	}
}
