package dash

import (
	"slices"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// groupsForm edits the rate-limit groups of one membership (c on the
// Members view): one line of comma-separated group names. The quarantine
// groups are not in it: quarantine has its own view, and the form keeps
// them as they are.
type groupsForm struct {
	m      ratelimit.Membership
	in     textinput.Model
	err    string
	state  formState
	groups []string
	width  int
	keys   *KeyMap
	styles *Styles
}

func isQuarantineGroup(g string) bool {
	return g == ratelimit.GroupQuarantineCallers || g == ratelimit.GroupQuarantineTargets
}

func newGroupsForm(m ratelimit.Membership, keys *KeyMap, styles *Styles) groupsForm {
	in := textinput.New()
	in.Prompt = ""
	in.Placeholder = "comma-separated group names"
	in.CharLimit = 4096
	in.Cursor.SetMode(cursor.CursorStatic)
	in.PlaceholderStyle = styles.Dim
	in.Cursor.Style = styles.Cursor
	var groups []string
	for _, g := range m.Groups {
		if !isQuarantineGroup(g) {
			groups = append(groups, g)
		}
	}
	in.SetValue(strings.Join(groups, ", "))
	in.CursorEnd()
	return groupsForm{m: m, in: in, keys: keys, styles: styles}
}

func (f groupsForm) Init() tea.Cmd { return nil }

// SetSize sets the width the form may use.
func (f *groupsForm) SetSize(width, _ int) {
	f.width = width
	f.in.Width = max(f.innerWidth()-10, 8)
}

func (f groupsForm) innerWidth() int { return max(min(f.width-4, 72), 20) }

// State reports whether the form was submitted or canceled.
func (f groupsForm) State() formState { return f.state }

// Membership is the membership with the submitted groups, its quarantine
// groups kept.
func (f groupsForm) Membership() ratelimit.Membership {
	next := f.m
	next.Groups = slices.Clone(f.groups)
	for _, g := range f.m.Groups {
		if isQuarantineGroup(g) {
			next.Groups = append(next.Groups, g)
		}
	}
	return next
}

func (f *groupsForm) focus() tea.Cmd { return f.in.Focus() }

// Update edits the line; enter submits, esc cancels.
func (f groupsForm) Update(msg tea.Msg) (groupsForm, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return f, nil
	}
	switch {
	case k.Type == tea.KeyEsc:
		f.state = formCanceled
		return f, nil
	case key.Matches(k, f.keys.Submit):
		var groups []string
		for _, g := range strings.Split(f.in.Value(), ",") {
			if g = strings.TrimSpace(g); g != "" && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
		if len(groups) == 0 && !slices.ContainsFunc(f.m.Groups, isQuarantineGroup) {
			f.err = `groups: name at least one (rlctl member set --groups "" deletes the membership)`
			return f, nil
		}
		f.groups, f.state = groups, formSubmitted
		return f, nil
	}
	var cmd tea.Cmd
	f.in, cmd = f.in.Update(msg)
	f.err = ""
	return f, cmd
}

// View renders the form as a dialog box.
func (f groupsForm) View() string {
	st := f.styles
	inner := f.innerWidth()
	lines := []string{
		st.DialogTitle.Render("Groups of " + clean(f.m.Key())),
		"",
		"> " + st.Label.Render("groups") + "  " + f.in.View(),
		"",
		st.Dim.Render("comma-separated; quarantine is kept as it is (Quarantine view)"),
		st.Dim.Render("enter saves · esc cancel"),
	}
	if f.err != "" {
		lines = append(lines, st.FormError.Render(clean(f.err)))
	}
	for i, l := range lines {
		lines[i] = truncate(l, inner)
	}
	return st.Dialog.Width(inner + 2).Render(strings.Join(lines, "\n"))
}
