package dash

import (
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// fixtureEvents is a flood: alice over her tier's limit for the last
// minutes, a bot over a target's limit, mallory quarantined, and one row
// older than the view's window.
func fixtureEvents() []ratelimit.Event {
	minute := clock.Truncate(time.Minute)
	ev := func(ago int, kind, subject, def string, count int64) ratelimit.Event {
		m := minute.Add(-time.Duration(ago) * time.Minute)
		last := m.Add(30 * time.Second)
		if last.After(clock) {
			last = clock.Add(-time.Second)
		}
		return ratelimit.Event{Minute: m, Kind: kind, Subject: subject, DefinitionID: def, Count: count,
			FirstSeen: m, LastSeen: last}
	}
	const throttle, quarantined = ratelimit.EventRateLimitExceeded, ratelimit.EventQuarantineDenied
	evs := []ratelimit.Event{
		ev(0, throttle, "user:alice", "caller:group:developers:60", 1995),
		ev(1, throttle, "user:alice", "caller:group:developers:60", 1200),
		ev(2, throttle, "user:alice", "caller:group:developers:60", 300),
		ev(1, throttle, "agent:crawler", "target:mcp_server:github-mcp:60", 640),
		ev(3, throttle, "agent:crawler", "target:mcp_server:github-mcp:60", 80),
		ev(5, throttle, "ip:203.0.113.7", "caller:group:partners:3600", 12),
		ev(0, quarantined, "user:mallory", "", 41),
		ev(20, throttle, "user:ancient", "caller:group:developers:60", 9999), // before the window
	}
	evs[0].LastSeen = clock.Add(-5 * time.Second)
	return evs
}

// fixtureLockouts is the quarantine list with a live automatic lockout, an
// expired one and an operator's quarantine with an expiry.
func fixtureLockouts() client.QuarantineList {
	q := fixtureQuarantine()
	q.Callers = append(q.Callers,
		client.QuarantineEntry{ID: "user:alice", SubjectType: "user", Subject: "alice", Reason: "lockout: 5 violations of caller:group:developers:60 in 5m",
			QuarantinedAt: at(-3 * time.Minute), ExpiresAt: at(12 * time.Minute)},
		client.QuarantineEntry{ID: "client:crawler", SubjectType: "client", Subject: "crawler", Reason: "Automatic lockout",
			QuarantinedAt: at(-20 * time.Minute), ExpiresAt: at(-5 * time.Minute), Expired: true},
	)
	return q
}

// incidents is the loaded model on the Incidents view with the fixture
// events and lockouts.
func incidents(t *testing.T, w, h int) Model {
	t.Helper()
	m := apply(t, loaded(t, w, h), typed("6"))
	m = update(t, m, eventsMsg{reply: ok(m, resEvents), events: fixtureEvents()})
	return update(t, m, quarantineMsg{reply: ok(m, resQuarantine), list: fixtureLockouts()})
}

func init() {
	scenes = append(scenes,
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"incidents", incidents},
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"incidents_quarantine", func(t *testing.T, w, h int) Model { return apply(t, incidents(t, w, h), typed("a")) }},
	)
}

func TestIncidents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		steps string
		check func(t *testing.T, m Model, cmd tea.Cmd)
	}{
		{
			name: "subjects by calls refused, the window only",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				rows := m.incidents.list.Items()
				if len(rows) != 4 {
					t.Fatalf("%d rows, want 4 (user:ancient is older than the window): %+v", len(rows), rows)
				}
				r, _ := m.incidents.Selected()
				if r.subject != "user:alice" || r.total != 3495 || r.throttled != 3495 || r.topDef != "caller:group:developers:60" {
					t.Errorf("first row %+v, want alice with 3,495 throttles", r)
				}
				wantScreen(t, m, "user:mallory", "agent:crawler", "ip:203.0.113.7")
				wantNotScreen(t, m, "user:ancient")
			},
		},
		{
			name: "a sparkline per minute, the top limits and the live lockouts",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				// Per minute, oldest first: 12, -, 80, 300, 1,840, 1,995.
				if got := sparkline(m.incidents.spark); got != "·········▁·▁▂██" {
					t.Errorf("sparkline %q", got)
				}
				if got := sparkline([]int64{0, 1, 4, 8}); got != "·▁▄█" {
					t.Errorf("sparkline of 0 1 4 8: %q", got)
				}
				wantScreen(t, m, "peak 1,995", "4,227 in 15m", "top limits caller:group:developers:60 3,495 · target:mcp_server:github-mcp:60",
					"lockouts 1 user:alice ends in 12m")
				wantNotScreen(t, m, "client:crawler ends")
			},
		},
		{
			name:  "a opens the quarantine form filled in for the subject",
			steps: "a",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if !m.formOpen {
					t.Fatal("no form")
				}
				if got := m.form.inputs[fieldReason].Value(); got != "incident: 3,495 calls refused in 15m (caller:group:developers:60)" {
					t.Errorf("reason %q", got)
				}
				wantScreen(t, m, "alice", "1h")
				if subjectTypes[m.form.typeIdx] != ratelimit.SubjectUser || m.form.focus != fieldReason {
					t.Errorf("type %s focus %d, want user and the reason", subjectTypes[m.form.typeIdx], m.form.focus)
				}
			},
		},
		{
			name:  "the form then the confirmation quarantine it",
			steps: "a<enter><enter>",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantScreen(t, m, "Quarantine user:alice?", "Lifted after 1h.")
			},
		},
		{
			name:  "an agent caller is quarantined as its client",
			steps: "ja",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if !m.formOpen || subjectTypes[m.form.typeIdx] != ratelimit.SubjectClient || m.form.inputs[fieldSubject].Value() != "crawler" {
					t.Errorf("form open=%v type %s subject %q, want client crawler", m.formOpen, subjectTypes[m.form.typeIdx], m.form.inputs[fieldSubject].Value())
				}
			},
		},
		{
			name:  "an ip caller is quarantined as its network, the one address",
			steps: "jjja",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				if !m.formOpen || subjectTypes[m.form.typeIdx] != ratelimit.SubjectNetwork || m.form.inputs[fieldSubject].Value() != "203.0.113.7/32" {
					t.Fatalf("form open=%v type %s subject %q, want network 203.0.113.7/32", m.formOpen, subjectTypes[m.form.typeIdx], m.form.inputs[fieldSubject].Value())
				}
				if got := m.form.inputs[fieldReason].Value(); got != "incident: 12 calls refused in 15m (caller:group:partners:3600)" || m.form.focus != fieldReason {
					t.Errorf("reason %q focus %d", got, m.form.focus)
				}
				wantScreen(t, m, "(*) network", "203.0.113.7/32", "1h")
				wantNotScreen(t, m, "not a membership subject")
			},
		},
		{
			name:  "enter opens the row's limit in Limits",
			steps: "<enter>",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantTab(t, m, tabLimits)
				if q := m.limits.list.Query(); q != "id:caller:group:developers:60" || !m.limits.detailOpen {
					t.Errorf("Limits query %q detail %v", q, m.limits.detailOpen)
				}
				wantSelected(t, m, "caller:group:developers:60")
			},
		},
		{
			name:  "a row refused by quarantine only has no limit to open",
			steps: "jj<enter>",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				wantTab(t, m, tabIncidents)
				wantScreen(t, m, "no limit refused user:mallory")
			},
		},
		{
			name:  "a viewer cannot quarantine from it",
			steps: "",
			check: func(t *testing.T, m Model, _ tea.Cmd) {
				m = apply(t, m, failWith(resRole, errViewer))
				m, _ = press(t, m, "a")
				if m.formOpen {
					t.Error("a viewer opened the quarantine form")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, cmd := press(t, incidents(t, 80, 24), tt.steps)
			tt.check(t, m, cmd)
		})
	}
}

// TestIncidentsLoad: the view loads the window's events and the
// quarantine list when shown, and again on each refresh; a failed load
// keeps the data on screen.
func TestIncidentsLoad(t *testing.T) {
	t.Parallel()
	api := newFakeAPI()
	m := loaded(t, 80, 24)
	m.api = api
	m, _ = press(t, m, "6")
	if !m.inflight[resEvents] {
		t.Fatal("showing Incidents did not load the events")
	}
	m, _ = press(t, m, "r")
	if !m.inflight[resEvents] || !m.inflight[resQuarantine] {
		t.Fatalf("a refresh on Incidents: events in flight %v, quarantine %v, want both", m.inflight[resEvents], m.inflight[resQuarantine])
	}
	m.loadCmd(resEvents, ok(m, resEvents))()
	want := "ListEvents since=" + clock.Truncate(time.Minute).Add(-14*time.Minute).Format(time.RFC3339) + " limit=10000"
	if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
	m = update(t, m, eventsMsg{reply: ok(m, resEvents), events: fixtureEvents(), more: true})
	wantScreen(t, m, "10,000+ rows")
	m, _ = press(t, m, "r")
	m = update(t, m, eventsMsg{reply: reply{gen: m.gens[resEvents], round: m.round, err: errRefused}})
	wantScreen(t, m, "user:alice", "connection lost")
}

// TestIncidentsQuarantineIP: a on an anonymous caller's row (ip:<address>,
// or the /64 the gateways key IPv6 by) opens the quarantine form with the
// network the key names and no wider; the form and the confirmation then
// quarantine that network through the client.
func TestIncidentsQuarantineIP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		subject, network string
	}{
		{"ip:203.0.113.7", "203.0.113.7/32"},
		{"ip:2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{"ip:2001:db8:1:2::5", "2001:db8:1:2::5/128"},
		{"ip:::ffff:198.51.100.9", "198.51.100.9/32"},
	}
	for _, tt := range tests {
		t.Run(tt.subject, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI()
			m := apply(t, loaded(t, 100, 30), typed("6"))
			m.api = api
			minute := clock.Truncate(time.Minute)
			m = update(t, m, eventsMsg{reply: ok(m, resEvents), events: []ratelimit.Event{{Minute: minute,
				Kind: ratelimit.EventRateLimitExceeded, Subject: tt.subject, DefinitionID: "caller:group:anonymous:60", Count: 40,
				FirstSeen: minute, LastSeen: clock.Add(-time.Second)}}})
			m = update(t, m, quarantineMsg{reply: ok(m, resQuarantine), list: client.QuarantineList{}})
			m, _ = press(t, m, "a")
			if !m.formOpen || subjectTypes[m.form.typeIdx] != ratelimit.SubjectNetwork || m.form.inputs[fieldSubject].Value() != tt.network {
				t.Fatalf("form open=%v type %s subject %q, want network %s", m.formOpen, subjectTypes[m.form.typeIdx], m.form.inputs[fieldSubject].Value(), tt.network)
			}
			m, _ = press(t, m, "<enter><enter>")
			if m.formOpen || !m.confirmOpen {
				t.Fatalf("form open=%v confirm open=%v, want the confirmation; form error %q", m.formOpen, m.confirmOpen, m.form.err)
			}
			wantScreen(t, m, "Quarantine network:"+tt.network+"?", "Lifted after 1h.")
			m, cmd := press(t, m, "y")
			if cmd == nil {
				t.Fatal("no command after confirming")
			}
			if msg, isMutation := cmd().(mutationMsg); !isMutation {
				t.Fatalf("command produced %T, want mutationMsg", msg)
			}
			want := `Quarantine network:` + tt.network + ` reason="incident: 40 calls refused in 15m (caller:group:anonymous:60)" for=3600`
			if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, want) {
				t.Errorf("calls:\n%s\nwant %q", calls, want)
			}
		})
	}
}

// TestIPNetwork: the network an ip: key is quarantined as; what is not an
// address or a network is not offered.
func TestIPNetwork(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"203.0.113.7":         "203.0.113.7/32",
		"2001:db8:1:2::/64":   "2001:db8:1:2::/64",
		"2001:db8:1:2::5/64":  "2001:db8:1:2::/64",
		"2001:DB8::1":         "2001:db8::1/128",
		"::ffff:10.0.0.1":     "10.0.0.1/32",
		"::ffff:10.0.0.0/120": "10.0.0.0/24",
		"not-an-address":      "",
		"fe80::1%eth0":        "",
		"2001:db8::/999":      "",
		"::ffff:10.0.0.0/64":  "",
	} {
		got, ok := ipNetwork(key)
		if got != want || ok != (want != "") {
			t.Errorf("ipNetwork(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
}

// The Incidents filter reads client, the memberships' name for a caller
// with a client id, as agent, the record's: type:client finds
// agent:crawler.
func TestIncidentsFilterTakesClientForAgent(t *testing.T) {
	t.Parallel()
	for _, q := range []string{"type:client", "type:agent"} {
		m := incidents(t, 120, 30)
		m.incidents.list.setQuery(q)
		var shown []string
		for _, i := range m.incidents.list.idx {
			shown = append(shown, m.incidents.list.Items()[i].subject)
		}
		if len(shown) != 1 || shown[0] != "agent:crawler" {
			t.Errorf("%s shows %v, want agent:crawler alone", q, shown)
		}
	}
}
