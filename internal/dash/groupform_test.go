package dash

import (
	"strings"
	"testing"
)

// The Members view edits a membership's groups (c): the form holds its
// rate-limit groups, a confirmation says what changes, the write names the
// version it was opened on, and a quarantine group stays as it was.
func TestMembersEditGroups(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, keys, wantCall, wantText string
	}{
		{"add a group", "2/alice<enter>c, partners<enter>", "PutMembership user:alice groups=developers,partners if-version=0",
			"✓ set the groups of user:alice to developers, partners (version 1)"},
		{"replace, quarantine kept", "2/leaked<enter>c<ctrl+u>batch-jobs<enter>", "PutMembership client:leaked-bot groups=batch-jobs,quarantine-callers if-version=0",
			"✓ set the groups of client:leaked-bot to batch-jobs, quarantine-callers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI()
			m := loaded(t, 120, 40)
			m.api = api
			m, _ = press(t, m, tt.keys)
			wantScreen(t, m, "Set the groups of")
			m, cmd := press(t, m, "y")
			if cmd == nil {
				t.Fatal("no command after confirming")
			}
			msg, isMutation := cmd().(mutationMsg)
			if !isMutation {
				t.Fatalf("command produced %T, want mutationMsg", msg)
			}
			if calls := strings.Join(api.Calls(), "\n"); !strings.Contains(calls, tt.wantCall) {
				t.Errorf("calls:\n%s\nwant %q", calls, tt.wantCall)
			}
			m = update(t, m, msg)
			wantScreen(t, m, tt.wantText)
		})
	}
	// Nothing changed, an empty list, esc: nothing is sent.
	api := newFakeAPI()
	m := loaded(t, 120, 40)
	m.api = api
	m, _ = press(t, m, "2/alice<enter>c<enter>")
	wantScreen(t, m, "nothing to change in user:alice")
	m, _ = press(t, m, "c<ctrl+u><enter>")
	wantScreen(t, m, "groups: name at least one")
	m, _ = press(t, m, "<esc>")
	wantScreen(t, m, "canceled: set the groups of user:alice")
	for _, c := range api.Calls() {
		if strings.HasPrefix(c, "PutMembership") {
			t.Errorf("sent %s", c)
		}
	}
	// A viewer cannot open it.
	v := loaded(t, 120, 40)
	v.setViewer()
	if v, _ = press(t, v, "2c"); v.groupsOpen {
		t.Error("a viewer opened the groups form")
	}
}
