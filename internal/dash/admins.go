package dash

import (
	"cmp"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// adminsView lists the administrators: the identities that bypass caller
// limits and can never be quarantined.
type adminsView struct {
	list list[ratelimit.Admin]
}

func newAdminsView(keys *KeyMap, styles *Styles, now func() time.Time) adminsView {
	spec := &listSpec[ratelimit.Admin]{
		noun: "administrators",
		one:  "administrator",
		columns: []Column{
			{Title: "TYPE", Min: 6},
			{Title: "SUBJECT", Min: 14, Weight: 3},
			{Title: "NOTE", Min: 10, Weight: 3},
			{Title: "CREATED", Min: 19},
			{Title: "BY", Min: 8, Max: 20, Weight: 1},
		},
		cells: func(a ratelimit.Admin) []string {
			return []string{a.SubjectType, a.Subject, a.Note, formatStampPtr(a.CreatedAt, now().Location()), a.CreatedBy}
		},
		key:  func(a ratelimit.Admin) string { return a.Key() },
		text: func(a ratelimit.Admin) string { return a.Key() + " " + a.Note + " " + a.CreatedBy },
		fields: map[string]func(ratelimit.Admin, string) bool{
			"type":    func(a ratelimit.Admin, v string) bool { return strings.EqualFold(a.SubjectType, v) },
			"subject": func(a ratelimit.Admin, v string) bool { return strings.EqualFold(a.Subject, v) },
		},
		sorts: []sortSpec[ratelimit.Admin]{
			{name: "subject", cmp: func(a, b ratelimit.Admin) int { return 0 }},
			{name: "created", cmp: func(a, b ratelimit.Admin) int { return cmpTimePtr(b.CreatedAt, a.CreatedAt) }},
			{name: "by", cmp: func(a, b ratelimit.Admin) int { return cmp.Compare(a.CreatedBy, b.CreatedBy) }},
		},
	}
	return adminsView{list: newList(spec, keys, styles)}
}

func (v adminsView) Init() tea.Cmd { return nil }

func (v *adminsView) SetSize(width, height int) { v.list.SetSize(width, height) }

// SetAdmins replaces the administrators.
func (v *adminsView) SetAdmins(as []ratelimit.Admin) { v.list.SetItems(as) }

func (v adminsView) Update(msg tea.Msg) (adminsView, tea.Cmd) {
	var cmd tea.Cmd
	v.list, cmd = v.list.Update(msg)
	return v, cmd
}

func (v adminsView) View() string { return v.list.View() }
