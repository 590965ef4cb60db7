package dash

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// step makes the next message from the model as it is, so a reply can
// answer the latest request.
type step func(Model) tea.Msg

func send(msgs ...tea.Msg) []step {
	out := make([]step, len(msgs))
	for i, msg := range msgs {
		out[i] = func(Model) tea.Msg { return msg }
	}
	return out
}

func typed(s string) []step {
	var out []step
	for _, k := range keys(s) {
		out = append(out, send(k)...)
	}
	return out
}

func steps(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// answer is the server's reply to the latest request for res.
func answer(res resource, build func(reply) tea.Msg) []step {
	return []step{func(m Model) tea.Msg { return build(ok(m, res)) }}
}

func failWith(res resource, err error) []step {
	return answer(res, func(r reply) tea.Msg {
		r.err = err
		switch res {
		case resDefinitions:
			return definitionsMsg{reply: r}
		case resMemberships:
			return membershipsMsg{reply: r}
		case resQuarantine:
			return quarantineMsg{reply: r}
		case resAudit:
			return auditMsg{reply: r}
		case resRole:
			return roleMsg{reply: r}
		}
		panic("failWith: no message for resource")
	})
}

// Errors as the SDK returns them.
var (
	errRefused = fmt.Errorf("list definitions: %w", &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.OpError{Op: "connect", Err: syscall.ECONNREFUSED}})
	errViewer = &client.APIError{StatusCode: 403, Type: "https://rlctl.dev/problems/forbidden", Title: "Forbidden",
		Detail: `token "ro" has role viewer, which may not POST /api/rate-limits-enabled/caller:group:batch-jobs:60`}
	errAdminQuarantine = &client.APIError{StatusCode: 403, Type: "https://rlctl.dev/problems/admin-quarantine",
		Title: "Refusing to quarantine an administrator", Detail: "client:gateway-health is an administrator and cannot be quarantined"}
	errConflict = &client.APIError{StatusCode: 409, Type: "https://rlctl.dev/problems/conflict", Title: "Conflict",
		Detail: "definition caller:group:batch-jobs:60 was changed by another request"}
	errUnavailable = &client.APIError{StatusCode: 503, Type: "https://rlctl.dev/problems/unavailable", Title: "Service unavailable",
		Detail: "the database did not answer in time; retry shortly"}
)

func mutationFailed(verb string, err error) []step {
	return send(mutationMsg{act: action{verb: verb}, err: err})
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		start func(t *testing.T) Model // default: every fixture loaded at 80x24
		steps []step
		check func(t *testing.T, m Model, cmd tea.Cmd)
	}{
		// Navigation.
		{
			name:  "number keys switch views",
			steps: typed("3"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantTab(t, m, tabQuarantine) },
		},
		{
			name:  "tab and shift+tab cycle and wrap",
			steps: typed("<shift+tab><shift+tab><tab>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantTab(t, m, numTabs-1) }, // the last view
		},
		{
			name: "switching to a view never loaded loads it",
			start: func(t *testing.T) Model {
				m := newModel(t, newFakeAPI(), 80, 24)
				return apply(t, m, answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: fixtureDefinitions()} }))
			},
			steps: typed("2"),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				if !m.inflight[resMemberships] || cmd == nil {
					t.Errorf("memberships not requested on switching to Members (inflight=%v)", m.inflight[resMemberships])
				}
				wantScreen(t, m, "loading memberships")
			},
		},
		{
			name:  "cursor moves and stops at the ends",
			steps: typed("jjjjjjjjjjjjk"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantSelected(t, m, "target:mcp_server:github-mcp:60") },
		},
		{
			name:  "G and g jump to the last and first row",
			steps: typed("G"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantSelected(t, m, "target:server_group:search-fleet:60") },
		},
		{
			name:  "q quits",
			steps: typed("q"),
			check: func(t *testing.T, _ Model, cmd tea.Cmd) { wantQuit(t, cmd) },
		},
		{
			name:  "enter opens the detail pane and loads the group's memberships",
			steps: typed("j<enter>"),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				if !m.limits.detailOpen || m.limits.detail.id != "caller:group:developers:60" || !m.inflight[resDetail] {
					t.Fatalf("detail open=%v id=%q inflight=%v", m.limits.detailOpen, m.limits.detail.id, m.inflight[resDetail])
				}
				wantScreen(t, m, "memberships of developers: loading")
			},
		},
		{
			name: "the detail pane shows the loaded memberships and counters",
			steps: steps(typed("j<enter>"), answer(resDetail, func(r reply) tea.Msg {
				return detailMsg{reply: r, id: "caller:group:developers:60", memberships: fixtureMemberships()[:2], countersOK: true,
					counters: []client.Counter{{Key: "rl:caller:user:alice:60", Count: 12, WindowSeconds: 60, ExpiresAt: clock.Add(30 * time.Second)}}}
			})),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "memberships of developers: 2", "user:alice  user:bob", "live counters: 1", "rl:caller:user:alice:60  12")
			},
		},
		{
			name: "the detail pane says when the server listed only part of the counters",
			steps: steps(typed("j<enter>"), answer(resDetail, func(r reply) tea.Msg {
				return detailMsg{reply: r, id: "caller:group:developers:60", countersOK: true, countersTruncated: true,
					counters: []client.Counter{{Key: "rl:caller:user:alice:60", Count: 12, WindowSeconds: 60, ExpiresAt: clock.Add(30 * time.Second)}}}
			})),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "live counters: 1 or more (the server stopped looking)")
			},
		},
		{
			name:  "esc closes the detail pane",
			steps: typed("<enter><esc>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.limits.detailOpen {
					t.Error("detail pane still open")
				}
			},
		},

		// Filtering.
		{
			name:  "typing filters as you type",
			steps: typed("/develop"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantRows(t, m, 2)
				if !m.limits.list.Filtering() {
					t.Error("filter input closed")
				}
				wantScreen(t, m, "2 of 8")
			},
		},
		{
			name:  "keys are text while filtering: q does not quit, 2 does not switch",
			steps: typed("/q2"),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				wantTab(t, m, tabLimits)
				if q := m.limits.list.Query(); q != "q2" {
					t.Errorf("query = %q, want q2", q)
				}
				if cmd != nil {
					if _, quit := cmd().(tea.QuitMsg); quit {
						t.Error("q quit while filtering")
					}
				}
			},
		},
		{
			name:  "enter keeps the filter and gives the keys back",
			steps: typed("/shadow<enter>3"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantTab(t, m, tabQuarantine)
				if q := m.limits.list.Query(); q != "shadow" || m.limits.list.Len() != 1 {
					t.Errorf("query %q with %d rows, want shadow with 1", q, m.limits.list.Len())
				}
			},
		},
		{
			name:  "esc while filtering clears the filter",
			steps: typed("/zzz<esc>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantRows(t, m, 8) },
		},
		{
			name:  "field terms match one field exactly",
			steps: typed("/axis:caller enabled:yes<enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantRows(t, m, 2) },
		},
		{
			name:  "ids with colons are free text",
			steps: typed("/target:mcp_server<enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantRows(t, m, 1) },
		},
		{
			name:  "no match says so",
			steps: typed("/nothing-like-this<enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantRows(t, m, 0)
				wantScreen(t, m, "no definitions", "0 of 8")
			},
		},
		{
			name:  "s cycles the sort and keeps the selection",
			steps: typed("jjs"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if s := m.limits.list.SortName(); s != "name" {
					t.Errorf("sort = %q, want name", s)
				}
				wantSelected(t, m, "caller:group:partners:3600")
			},
		},
		{
			name:  "enter on a member row shows the definitions of its group",
			steps: typed("2jjjj<enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantTab(t, m, tabLimits)
				if q := m.limits.list.Query(); q != "group:developers" {
					t.Errorf("Limits filter = %q, want group:developers", q)
				}
				wantRows(t, m, 2)
				wantScreen(t, m, "definitions of group developers")
			},
		},
		{
			name:  "a server group's members match group:",
			steps: typed("/group:search-eu<enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) { wantSelected(t, m, "target:server_group:search-fleet:60") },
		},

		// Confirmation flows.
		{
			name:  "e asks before disabling",
			steps: typed("je"),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				if !m.confirmOpen || cmd != nil {
					t.Fatalf("confirm open=%v cmd=%v", m.confirmOpen, cmd != nil)
				}
				wantScreen(t, m, "Disable caller:group:developers:60?", "y yes, send it")
			},
		},
		{
			name:  "n cancels and sends nothing",
			steps: typed("en"),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				if m.confirmOpen || cmd != nil {
					t.Fatalf("confirm open=%v cmd=%v", m.confirmOpen, cmd != nil)
				}
				wantScreen(t, m, "canceled: enable caller:group:batch-jobs:60")
			},
		},
		{
			name:  "other keys leave the question open",
			steps: typed("exq<enter>"),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				if !m.confirmOpen {
					t.Fatal("confirmation closed by a key that is not y, n or esc")
				}
			},
		},
		{
			name:  "y sends and says so until the answer",
			steps: typed("ey"),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				if m.confirmOpen || cmd == nil {
					t.Fatalf("confirm open=%v cmd=%v", m.confirmOpen, cmd != nil)
				}
				wantScreen(t, m, "sending: enable caller:group:batch-jobs:60")
			},
		},
		{
			name: "the server's answer lands in the status line and reloads",
			steps: steps(typed("ey"), send(mutationMsg{act: toggleAction(fixtureDefinitions()[2]),
				result: "enabled caller:group:batch-jobs:60 (now enabled=yes, version 8)"})),
			check: func(t *testing.T, m Model, cmd tea.Cmd) {
				wantScreen(t, m, "✓ enabled caller:group:batch-jobs:60 (now enabled=yes, version 8)")
				if !m.inflight[resDefinitions] || cmd == nil {
					t.Error("definitions not reloaded after the change")
				}
				if !m.loadedAt[resQuarantine].IsZero() {
					t.Error("quarantine not marked for reload")
				}
			},
		},
		{
			name:  "a opens the quarantine form",
			steps: typed("3a"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if !m.formOpen {
					t.Fatal("form not open")
				}
				wantScreen(t, m, "Quarantine a caller or a target", "(*) client")
			},
		},
		{
			name:  "the form needs a subject",
			steps: typed("3a<tab><tab><tab><enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if !m.formOpen || m.confirmOpen {
					t.Fatal("form submitted without a subject")
				}
				wantScreen(t, m, "subject: required")
			},
		},
		{
			name:  "the form checks the duration",
			steps: typed("3au<tab>eve<tab><tab>soon<enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, `duration: "soon" is not a duration`)
			},
		},
		{
			name:  "a filled form asks for confirmation",
			steps: typed("3as<tab>bad-mcp<tab>returns garbage<tab>2h<enter>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.formOpen || !m.confirmOpen {
					t.Fatalf("form open=%v confirm open=%v", m.formOpen, m.confirmOpen)
				}
				wantScreen(t, m, "Quarantine server:bad-mcp?", "Every data-plane call to server:bad-mcp is denied.",
					"Reason: returns garbage", "Lifted after 2h.")
			},
		},
		{
			name:  "esc drops the form",
			steps: typed("3aq<esc>"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.formOpen || m.confirmOpen {
					t.Fatal("form still open")
				}
			},
		},
		{
			name:  "d asks before releasing the selected subject",
			steps: typed("3jd"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "Release user:mallory from quarantine?", "It was quarantined for: scraping")
			},
		},
		{
			name:  "t asks before switching the callers' quarantine off",
			steps: typed("3t"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "Switch callers quarantine OFF?")
			},
		},
		{
			name:  "T asks before switching the targets' quarantine on",
			steps: typed("3T"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "Switch targets quarantine ON?")
			},
		},

		// Errors from the server.
		{
			name:  "quarantining an administrator shows the refusal, keeps the keys",
			steps: steps(typed("3"), mutationFailed("quarantine client:gateway-health", errAdminQuarantine)),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "✗ quarantine client:gateway-health: refused: client:gateway-health is an administrator")
				if m.readOnly() {
					t.Error("a refusal of one change made the dashboard read-only")
				}
			},
		},
		{
			name:  "403 for the role hides the mutating keys from then on",
			steps: steps(mutationFailed("disable caller:group:batch-jobs:60", errViewer), typed("e")),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if !m.readOnly() || m.confirmOpen {
					t.Fatalf("read-only=%v confirm open=%v", m.readOnly(), m.confirmOpen)
				}
				wantScreen(t, m, "forbidden: token \"ro\" has role viewer", "read-only (viewer)")
				wantNotScreen(t, m, "e enable/disable")
			},
		},
		{
			name:  "409 is reported as a conflict",
			steps: mutationFailed("disable caller:group:batch-jobs:60", errConflict),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "✗ disable caller:group:batch-jobs:60: conflict: definition caller:group:batch-jobs:60 was changed")
			},
		},
		{
			name:  "503 on a change says the server is unavailable",
			steps: mutationFailed("disable caller:group:batch-jobs:60", errUnavailable),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "server unavailable: the database did not answer in time")
				if m.conn != connLost {
					t.Error("connection not marked lost")
				}
			},
		},
		{
			name:  "connection refused on a refresh: banner, stale data, backoff",
			steps: steps(typed("r"), failWith(resDefinitions, errRefused)),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.conn != connLost || m.failures != 1 || m.state != stateReady {
					t.Fatalf("conn=%v failures=%d state=%v", m.conn, m.failures, m.state)
				}
				wantScreen(t, m, "connection refused · retrying in 2s · stale: last refresh 0s ago", "developers")
				if want := clock.Add(2 * time.Second); !m.nextRefresh.Equal(want) {
					t.Errorf("next refresh %v, want %v", m.nextRefresh, want)
				}
			},
		},
		{
			name: "a failure is counted once per round",
			steps: steps(
				typed("r"), failWith(resDefinitions, errRefused),
				send(tickMsg(clock)), // too early: no new round
				failWith(resDefinitions, errRefused),
			),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				// The second failure answers the same request: not counted.
				if m.failures != 1 {
					t.Errorf("failures = %d, want 1", m.failures)
				}
			},
		},
		{
			name: "a later success reconnects",
			steps: steps(typed("r"), failWith(resDefinitions, errRefused),
				answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: fixtureDefinitions()[:1]} })),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.conn != connUp || m.failures != 0 {
					t.Fatalf("conn=%v failures=%d", m.conn, m.failures)
				}
				wantNotScreen(t, m, "connection lost")
				wantRows(t, m, 1)
			},
		},
		{
			name: "a stale reply is dropped",
			steps: steps(typed("rr"), // two requests; the first is now stale
				send(definitionsMsg{reply: reply{gen: 1}, defs: fixtureDefinitions()[:3]})),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantRows(t, m, 8)
				if !m.inflight[resDefinitions] {
					t.Error("the newer request was forgotten")
				}
			},
		},
		{
			name: "the first load failing shows the error state, then recovers",
			start: func(t *testing.T) Model {
				m := newModel(t, newFakeAPI(), 80, 24)
				return apply(t, m, steps(send(tickMsg(clock)), failWith(resDefinitions, errRefused)))
			},
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.state != stateError {
					t.Fatalf("state = %v, want error", m.state)
				}
				wantScreen(t, m, "cannot load from http://rlapi.test:8080", "cannot reach the server: list definitions: dial tcp", "retrying in 2s (attempt 2)")
				m = apply(t, m, answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: fixtureDefinitions()} }))
				if m.state != stateReady {
					t.Fatalf("state = %v after a success, want ready", m.state)
				}
			},
		},
		{
			name:  "a viewer token found upfront hides the mutating keys",
			start: func(t *testing.T) Model { return newModel(t, newFakeAPI(), 80, 24) },
			steps: steps(
				answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: fixtureDefinitions()} }),
				failWith(resRole, errViewer),
				typed("3"),
				answer(resQuarantine, func(r reply) tea.Msg { return quarantineMsg{reply: r, list: fixtureQuarantine()} }),
				typed("adtT"),
			),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.formOpen || m.confirmOpen {
					t.Fatal("a mutation opened for a viewer")
				}
				wantScreen(t, m, "read-only (viewer)", "kill switches: callers ON")
				wantNotScreen(t, m, "a quarantine", "t / T")
			},
		},
		{
			name: "the audit view follows new entries when on the newest",
			steps: steps(typed("5"), answer(resAudit, func(r reply) tea.Msg {
				return auditMsg{reply: r, after: 42, entries: []ratelimit.AuditEntry{{ID: 43, Time: clock, Actor: "token:x", Action: "delete", ResourceType: "membership", ResourceID: "user:bob"}}}
			})),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				e, _ := m.audit.list.Selected()
				if e.ID != 43 || m.audit.list.Len() != 4 {
					t.Errorf("selected #%d of %d, want #43 of 4", e.ID, m.audit.list.Len())
				}
			},
		},
		{
			name: "the audit view keeps a row picked further down",
			steps: steps(typed("5j"), answer(resAudit, func(r reply) tea.Msg {
				return auditMsg{reply: r, after: 42, entries: []ratelimit.AuditEntry{{ID: 43, Time: clock}}}
			})),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if e, _ := m.audit.list.Selected(); e.ID != 41 {
					t.Errorf("selected #%d, want #41", e.ID)
				}
			},
		},
		{
			name:  "resizing reflows",
			steps: send(tea.WindowSizeMsg{Width: 120, Height: 40}),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if m.limits.list.table.height != 40-4-1 || m.limits.list.width != 120 {
					t.Errorf("table %dx%d", m.limits.list.width, m.limits.list.table.height)
				}
				wantScreen(t, m, "context prod", "user=120 agent=60")
			},
		},
		{
			name:  "? shows every key and any key closes it",
			steps: typed("?"),
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "Keys", "shift+tab", "release", "field:value")
				m = apply(t, m, typed("x"))
				if m.showHelp {
					t.Error("help still shown")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var m Model
			if tt.start != nil {
				m = tt.start(t)
			} else {
				m = loaded(t, 80, 24)
			}
			var cmd tea.Cmd
			for _, s := range tt.steps {
				var next tea.Model
				next, cmd = m.Update(s(m))
				m = next.(Model)
			}
			tt.check(t, m, cmd)
			wantFits(t, m.View(), m.width, m.height)
		})
	}
}

// TestCommandsReachTheAPI runs the commands a confirmed change produces
// against a fake server and feeds the answers back.
func TestCommandsReachTheAPI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		keys     string
		writeErr error
		wantCall string
		wantText string
	}{
		{"toggle", "jey", nil, "SetDefinitionEnabled caller:group:developers:60 false", "✓ disabled caller:group:developers:60 (now enabled=no, version 9)"},
		{"quarantine", "3ac<tab>leaked-key<tab>incident 7<tab>90m<enter>y", nil, `Quarantine client:leaked-key reason="incident 7" for=5400`, "✓ quarantined client:leaked-key"},
		{"release", "3dy", nil, "Unquarantine client:leaked-bot", "✓ released client:leaked-bot from quarantine"},
		{"sentinel", "3Ty", nil, "SetDefinitionEnabled quarantine:group:quarantine-targets:1 true", "✓ targets quarantine is ON"},
		{"admin refused", "3ac<tab>gateway-health<tab><tab><enter>y", errAdminQuarantine, "Quarantine client:gateway-health", "refused: client:gateway-health is an administrator"},
		{"connection refused", "jey", errRefused, "SetDefinitionEnabled", "cannot reach the server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI()
			api.writeErr = tt.writeErr
			m := loaded(t, 80, 24)
			m.api = api
			m, cmd := press(t, m, tt.keys)
			if cmd == nil {
				t.Fatal("no command after confirming")
			}
			msg, isMutation := cmd().(mutationMsg)
			if !isMutation {
				t.Fatalf("command produced %T, want mutationMsg", msg)
			}
			if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, tt.wantCall) {
				t.Errorf("calls:\n%s\nwant one with %q", calls, tt.wantCall)
			}
			m = update(t, m, msg)
			wantScreen(t, m, tt.wantText)
		})
	}
}

func TestLoadCommands(t *testing.T) {
	t.Parallel()
	api := newFakeAPI()
	m := newModel(t, api, 80, 24)
	m = update(t, m, tickMsg(clock))
	for _, res := range []resource{resDefinitions, resRole} {
		if !m.inflight[res] {
			t.Errorf("%s not requested by the first tick", resourceNames[res])
		}
	}
	// Run the loads directly (the batch also holds the next tick).
	for _, res := range []resource{resDefinitions, resMemberships, resQuarantine, resAdmins, resAudit, resRole} {
		msg := m.loadCmd(res, ok(m, res))()
		m = update(t, m, msg)
	}
	if m.state != stateReady || m.role != roleAdmin || m.limits.list.Len() != 8 || m.members.list.Len() != 7 ||
		m.quarantine.list.Len() != 4 || m.admins.list.Len() != 2 || m.audit.list.Len() != 3 {
		t.Errorf("state=%v role=%v rows %d/%d/%d/%d/%d", m.state, m.role, m.limits.list.Len(), m.members.list.Len(),
			m.quarantine.list.Len(), m.admins.list.Len(), m.audit.list.Len())
	}
	// The audit follows from the newest entry it has.
	m.gens[resAudit]++
	m.loadCmd(resAudit, ok(m, resAudit))()
	calls := api.Calls()
	if last := calls[len(calls)-1]; last != "ListAudit after=42" {
		t.Errorf("audit follow-up = %q, want ListAudit after=42", last)
	}
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err    error
		want   string
		outage bool
		role   bool
	}{
		{errRefused, "cannot reach the server: list definitions: dial tcp: connect: connection refused", true, false},
		{errViewer, `forbidden: token "ro" has role viewer`, false, true},
		{errAdminQuarantine, "refused: client:gateway-health is an administrator", false, false},
		{errConflict, "conflict: definition", false, false},
		{errUnavailable, "server unavailable: the database did not answer", true, false},
		{&client.APIError{StatusCode: 401, Detail: "invalid token"}, "unauthorized: invalid token", false, false},
		{&client.APIError{StatusCode: 400, Detail: "user_max_requests: below the floor"}, "invalid: user_max_requests", false, false},
		{fmt.Errorf("list: %w", errors.Join(errors.New("x"), syscall.ECONNRESET)), "cannot reach the server", true, false},
	}
	for _, tt := range tests {
		if got := errorText(tt.err); !strings.HasPrefix(got, tt.want) {
			t.Errorf("errorText(%v) = %q, want prefix %q", tt.err, got, tt.want)
		}
		if got := isOutage(tt.err); got != tt.outage {
			t.Errorf("isOutage(%v) = %v", tt.err, got)
		}
		if got := isRoleRefusal(tt.err); got != tt.role {
			t.Errorf("isRoleRefusal(%v) = %v", tt.err, got)
		}
	}
}

// TestStopsOnRefusedToken: a 401 on any load, or a 403 "forbidden" on a
// read, ends the program with that error instead of retrying: retries
// of a refused token trip rlapi's failed-auth lockout.
func TestStopsOnRefusedToken(t *testing.T) {
	t.Parallel()
	errToken := &client.APIError{StatusCode: 401, Type: "https://rlctl.dev/problems/unauthorized", Title: "Unauthorized", Detail: "invalid token"}
	for _, tt := range []struct {
		name string
		res  resource
		err  error
	}{
		{"401 on definitions", resDefinitions, errToken},
		{"401 on the role check", resRole, errToken},
		{"403 on a read", resQuarantine, errViewer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newModel(t, newFakeAPI(), 80, 24)
			m.gens[tt.res]++
			msg := failWith(tt.res, tt.err)[0](m)
			next, cmd := m.Update(msg)
			wantQuit(t, cmd)
			if got := next.(Model).Err(); !errors.Is(got, tt.err) {
				t.Errorf("Err() = %v, want %v", got, tt.err)
			}
		})
	}
	// A 401 answering a change also stops.
	m := loaded(t, 80, 24)
	next, cmd := m.Update(mutationMsg{act: action{verb: "release user:mallory"}, err: errToken})
	wantQuit(t, cmd)
	if next.(Model).Err() == nil {
		t.Error("Err() = nil after a 401 on a change")
	}
}

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"", 0, ""},
		{"90s", 90 * time.Second, ""},
		{"2h30m", 150 * time.Minute, ""},
		{"7d", 7 * 24 * time.Hour, ""},
		{"500ms", 0, "at least 1s"},
		{"400d", 0, "at most 365d"},
		{"soon", 0, "not a duration"},
	}
	for _, tt := range tests {
		got, err := parseDuration(tt.in)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("parseDuration(%q) error = %v, want %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("parseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func apply(t *testing.T, m Model, ss []step) Model {
	t.Helper()
	for _, s := range ss {
		m = update(t, m, s(m))
	}
	return m
}

func wantTab(t *testing.T, m Model, want tab) {
	t.Helper()
	if m.tab != want {
		t.Errorf("tab = %s, want %s", tabNames[m.tab], tabNames[want])
	}
}

func wantRows(t *testing.T, m Model, n int) {
	t.Helper()
	if got := m.limits.list.Len(); got != n {
		t.Errorf("Limits shows %d rows, want %d", got, n)
	}
}

func wantSelected(t *testing.T, m Model, id string) {
	t.Helper()
	d, _ := m.limits.Selected()
	if definitionID(d) != id {
		t.Errorf("selected %q, want %q", definitionID(d), id)
	}
}

func wantQuit(t *testing.T, cmd tea.Cmd) {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command, want tea.Quit")
	}
	if _, quit := cmd().(tea.QuitMsg); !quit {
		t.Fatal("command is not tea.Quit")
	}
}

// flat joins a screen's words with single spaces, so that texts wrapped
// over lines or spread over columns can be looked for.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// wantScreen checks that the rendered screen shows each text.
func wantScreen(t *testing.T, m Model, texts ...string) {
	t.Helper()
	screen := m.View()
	for _, s := range texts {
		if !strings.Contains(flat(screen), flat(s)) {
			t.Errorf("screen lacks %q:\n%s", s, screen)
		}
	}
}

func wantNotScreen(t *testing.T, m Model, texts ...string) {
	t.Helper()
	screen := m.View()
	for _, s := range texts {
		if strings.Contains(flat(screen), flat(s)) {
			t.Errorf("screen shows %q:\n%s", s, screen)
		}
	}
}

// TestBackoff advances a clock through failed rounds: the wait doubles from
// the refresh interval up to maxBackoff, and a success resets it.
func TestBackoff(t *testing.T) {
	t.Parallel()
	now := clock
	m := New(t.Context(), Config{API: newFakeAPI(), Now: func() time.Time { return now }, Styles: NewStyles(io.Discard, false)})
	m = update(t, m, tea.WindowSizeMsg{Width: 80, Height: 24})
	m = apply(t, m, answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: fixtureDefinitions()} }))
	var waits []time.Duration
	for range 6 {
		now = m.nextRefresh
		m = update(t, m, tickMsg(now))
		if !m.inflight[resDefinitions] {
			t.Fatalf("no refresh at %v", now)
		}
		m = apply(t, m, failWith(resDefinitions, errRefused))
		waits = append(waits, m.nextRefresh.Sub(now))
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Errorf("waits %v, want %v", waits, want)
	}
	now = m.nextRefresh
	m = update(t, m, tickMsg(now))
	m = apply(t, m, answer(resDefinitions, func(r reply) tea.Msg { return definitionsMsg{reply: r, defs: fixtureDefinitions()} }))
	if m.failures != 0 || m.conn != connUp || m.nextRefresh.Sub(now) != 2*time.Second {
		t.Errorf("after a success: failures=%d conn=%v next in %v", m.failures, m.conn, m.nextRefresh.Sub(now))
	}
}

// TestEnforcementSwitch: E asks before flipping the master switch, sends
// it, and the header says when enforcement is off; a viewer has no E.
func TestEnforcementSwitch(t *testing.T) {
	t.Parallel()
	api := newFakeAPI()
	m := loaded(t, 120, 40)
	m.api = api
	m = update(t, m, enforcementMsg{reply: ok(m, resEnforcement), enforcement: ratelimit.Enforcement{Enabled: true, Version: 3}})
	if strings.Contains(m.View(), "ENFORCEMENT OFF") {
		t.Fatal("header says off while on")
	}
	m, _ = press(t, m, "E")
	wantScreen(t, m, "Turn enforcement OFF for every gateway?")
	m, _ = press(t, m, "n")
	if len(api.Calls()) != 0 {
		t.Fatalf("canceling sent %v", api.Calls())
	}
	m, cmd := press(t, m, "Ey")
	if cmd == nil {
		t.Fatal("no command after confirming")
	}
	msg, isMutation := cmd().(mutationMsg)
	if !isMutation {
		t.Fatalf("command produced %T", msg)
	}
	if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, `SetEnforcement false reason="switched from the dashboard"`) {
		t.Errorf("calls: %s", calls)
	}
	m = update(t, m, msg)
	wantScreen(t, m, "✓ enforcement is OFF")
	if !m.inflight[resEnforcement] {
		t.Error("the switch is not reloaded after the change")
	}
	m = update(t, m, enforcementMsg{reply: ok(m, resEnforcement), enforcement: ratelimit.Enforcement{Enabled: false, Version: 4}})
	wantScreen(t, m, "ENFORCEMENT OFF")
	m, _ = press(t, m, "E")
	wantScreen(t, m, "Turn enforcement back on for every gateway?")

	v := loaded(t, 120, 40)
	v.setViewer()
	v, _ = press(t, v, "E")
	if v.confirmOpen {
		t.Error("a viewer can flip the master switch")
	}
}
