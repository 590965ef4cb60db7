package dash

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The quarantine form offers every subject type the server quarantines,
// picked by its first letter: networks and teams as well as users,
// clients, servers and agents.
func TestQuarantineFormOffersEverySubjectType(t *testing.T) {
	t.Parallel()
	want := []string{ratelimit.SubjectUser, ratelimit.SubjectClient, ratelimit.SubjectNetwork, ratelimit.SubjectTeam,
		ratelimit.SubjectServer, ratelimit.SubjectAgent}
	m, _ := press(t, loaded(t, 80, 24), "3a")
	wantScreen(t, m, "callers ( ) user  (*) client  ( ) network  ( ) team", "targets ( ) server  ( ) agent")
	seen := map[string]bool{}
	for _, typ := range want {
		m, _ = press(t, m, typ[:1])
		if got := subjectTypes[m.form.typeIdx]; got != typ {
			t.Errorf("key %q picks %s, want %s", typ[:1], got, typ)
		}
		wantScreen(t, m, "(*) "+typ)
		seen[typ] = true
	}
	if len(subjectTypes) != len(seen) {
		t.Errorf("form offers %v, want exactly %v", subjectTypes, want)
	}
}

// An invalid network is refused in the form, naming the field and the
// rule, and nothing is sent; a valid one is confirmed and sent in its
// canonical form, and a team goes through as typed.
func TestQuarantineFormNetworksAndTeams(t *testing.T) {
	t.Parallel()
	refused := []struct{ typed, want string }{
		{"10.1.2.3/16", "subject: has host bits set: the network is 10.1.0.0/16"},
		{"10.1.2.3", "subject: must be a network in CIDR form: write 10.1.2.3/32 for the one address"},
		{"10.1.0.0/33", `subject: prefix length "33": must be a number from 0 to 32`},
		{"not-a-network", "subject: must be a network in CIDR form, such as 10.1.0.0/16"},
		{"::ffff:10.1.0.0/112", "subject: an IPv4-mapped IPv6 network: write it as IPv4 (10.1.0.0/16)"},
	}
	for _, tt := range refused {
		t.Run(tt.typed, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI()
			m := loaded(t, 80, 24)
			m.api = api
			m, _ = press(t, m, "3an<tab>"+tt.typed+"<tab>scanner<tab>2h<enter>")
			if !m.formOpen || m.confirmOpen {
				t.Fatalf("form open=%v confirm open=%v, want the form kept open", m.formOpen, m.confirmOpen)
			}
			if m.form.focus != fieldSubject {
				t.Errorf("focus on field %d, want the subject", m.form.focus)
			}
			wantDialog(t, m, tt.want)
			if _, cmd := press(t, m, "<enter>"); cmd != nil {
				if msg, isMutation := cmd().(mutationMsg); isMutation {
					t.Errorf("enter again sent %+v", msg)
				}
			}
			for _, c := range api.Calls() {
				if strings.HasPrefix(c, "Quarantine") {
					t.Errorf("sent %q for an invalid network", c)
				}
			}
		})
	}

	sent := []struct{ keys, question, call string }{
		{"3an<tab> 2001:DB8:42::/48 <tab>scanner<tab>2h<enter>", "Quarantine network:2001:db8:42::/48?",
			`Quarantine network:2001:db8:42::/48 reason="scanner" for=7200`},
		{"3an<tab>203.0.113.0/24<tab><tab><enter>", "Quarantine network:203.0.113.0/24?",
			`Quarantine network:203.0.113.0/24 reason="" for=0`},
		{"3at<tab>acme<tab>unpaid<tab>7d<enter>", "Quarantine team:acme?",
			`Quarantine team:acme reason="unpaid" for=604800`},
	}
	for _, tt := range sent {
		t.Run(tt.call, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI()
			m := loaded(t, 80, 24)
			m.api = api
			m, _ = press(t, m, tt.keys)
			if m.formOpen || !m.confirmOpen {
				t.Fatalf("form open=%v confirm open=%v, want the confirmation; form error %q", m.formOpen, m.confirmOpen, m.form.err)
			}
			wantScreen(t, m, tt.question, "Every data-plane call from")
			m, cmd := press(t, m, "y")
			if cmd == nil {
				t.Fatal("no command after confirming")
			}
			msg, isMutation := cmd().(mutationMsg)
			if !isMutation {
				t.Fatalf("command produced %T, want mutationMsg", msg)
			}
			if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, tt.call) {
				t.Errorf("calls:\n%s\nwant %q", calls, tt.call)
			}
		})
	}

	// A team name with '|' is refused before anything is sent too.
	api := newFakeAPI()
	m := loaded(t, 80, 24)
	m.api = api
	m, _ = press(t, m, "3at<tab>a|b<tab><tab><enter>")
	if !m.formOpen || m.confirmOpen {
		t.Fatalf("form open=%v confirm open=%v for team a|b", m.formOpen, m.confirmOpen)
	}
	wantScreen(t, m, "subject: a team name must not contain '|'")
}

// wantDialog checks that the screen shows text, which may wrap across the
// lines of a dialog box.
func wantDialog(t *testing.T, m Model, text string) {
	t.Helper()
	screen := m.View()
	if !strings.Contains(flat(strings.ReplaceAll(screen, "│", " ")), flat(text)) {
		t.Errorf("screen lacks %q:\n%s", text, screen)
	}
}
