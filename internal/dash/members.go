package dash

import (
	"cmp"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// memberRow is one (subject, group) pair: a membership in three groups is
// three rows, so that each row names one group to jump to.
type memberRow struct {
	m     *ratelimit.Membership
	group string // "" for a membership without groups
}

func (r memberRow) subjectID() string { return ratelimit.MembershipID(r.m.SubjectType, r.m.Subject) }

// membersSpec is how the Members view lists memberships.
var membersSpec = &listSpec[memberRow]{
	noun: "memberships",
	columns: []Column{
		{Title: "TYPE", Min: 7}, // "network" whole
		{Title: "SUBJECT", Min: 12, Weight: 3},
		{Title: "GROUP", Min: 12, Weight: 2},
		{Title: "GROUPS", Min: 6, Right: true},
		{Title: "UPDATED", Min: 19},
	},
	key:  func(r memberRow) string { return r.subjectID() + "\x00" + r.group },
	text: func(r memberRow) string { return r.m.SubjectType + ":" + r.m.Subject + " " + r.group },
	fields: map[string]func(memberRow, string) bool{
		"type":    func(r memberRow, v string) bool { return strings.EqualFold(r.m.SubjectType, v) },
		"subject": func(r memberRow, v string) bool { return strings.EqualFold(r.m.Subject, v) },
		"group":   func(r memberRow, v string) bool { return strings.EqualFold(r.group, v) },
	},
	sorts: []sortSpec[memberRow]{
		{name: "subject", cmp: func(a, b memberRow) int { return 0 }},
		{name: "group", cmp: func(a, b memberRow) int { return cmp.Compare(a.group, b.group) }},
		{name: "type", cmp: func(a, b memberRow) int { return cmp.Compare(a.m.SubjectType, b.m.SubjectType) }},
		{name: "updated", cmp: func(a, b memberRow) int { return cmpTimePtr(b.m.UpdatedAt, a.m.UpdatedAt) }},
	},
}

func cmpTimePtr(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return a.Compare(*b)
}

// membersView lists subjects and their groups; enter jumps to the
// definitions of the row's group.
type membersView struct {
	list   list[memberRow]
	styles *Styles
	now    func() time.Time
}

func newMembersView(keys *KeyMap, styles *Styles, now func() time.Time) membersView {
	spec := *membersSpec
	spec.cells = func(r memberRow) []string {
		g := r.group
		if g == "" {
			g = "-"
		}
		updated := r.m.UpdatedAt
		if updated == nil {
			updated = r.m.CreatedAt
		}
		return []string{r.m.SubjectType, r.m.Subject, g, formatCount(len(r.m.Groups)), formatStampPtr(updated, now().Location())}
	}
	return membersView{list: newList(&spec, keys, styles), styles: styles, now: now}
}

func (v membersView) Init() tea.Cmd { return nil }

func (v *membersView) SetSize(width, height int) { v.list.SetSize(width, height) }

// SetMemberships replaces the memberships.
func (v *membersView) SetMemberships(ms []ratelimit.Membership) { v.list.SetItems(memberRows(ms)) }

// indexMemberships does the work of SetMemberships that can run off the UI
// goroutine: 100,000 memberships take tens of milliseconds to index.
func (v membersView) indexMemberships() func(ms []ratelimit.Membership) indexed[memberRow] {
	spec, sortBy := v.list.spec, v.list.sortBy
	return func(ms []ratelimit.Membership) indexed[memberRow] { return index(spec, memberRows(ms), sortBy) }
}

// memberRows expands memberships into one row per (subject, group).
func memberRows(ms []ratelimit.Membership) []memberRow {
	rows := make([]memberRow, 0, len(ms)+len(ms)/2)
	for i := range ms {
		m := &ms[i]
		if len(m.Groups) == 0 {
			rows = append(rows, memberRow{m: m})
			continue
		}
		for _, g := range m.Groups {
			rows = append(rows, memberRow{m: m, group: g})
		}
	}
	return rows
}

// SelectedGroup is the group of the row under the cursor.
// SelectedMembership is the membership of the selected row.
func (v membersView) SelectedMembership() (ratelimit.Membership, bool) {
	r, ok := v.list.Selected()
	if !ok || r.m == nil {
		return ratelimit.Membership{}, false
	}
	return *r.m, true
}

func (v membersView) SelectedGroup() (string, bool) {
	r, ok := v.list.Selected()
	if !ok || r.group == "" {
		return "", false
	}
	return r.group, true
}

func (v membersView) Update(msg tea.Msg) (membersView, tea.Cmd) {
	var cmd tea.Cmd
	v.list, cmd = v.list.Update(msg)
	return v, cmd
}

func (v membersView) View() string { return v.list.View() }
