package dash

import (
	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
)

// KeyMap is every key binding of the dashboard, with its help text. The
// footer and the full help (?) are generated from it, so a binding that is
// disabled (the mutating ones, for a viewer token) disappears from both and
// stops matching.
type KeyMap struct {
	Quit    key.Binding
	Help    key.Binding
	NextTab key.Binding
	PrevTab key.Binding
	Tabs    key.Binding // 1-6; matched by digit, listed for help
	Refresh key.Binding

	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding

	Filter key.Binding
	Back   key.Binding // esc: leave the filter, close the pane, clear the filter
	Sort   key.Binding
	Detail key.Binding // enter on Limits
	Jump   key.Binding // enter on Members
	Limits key.Binding // enter on Incidents: the row's limit

	Toggle        key.Binding // e: enable/disable a definition
	Edit          key.Binding // c: change a definition's algorithm, limits and bursts
	Add           key.Binding // a: quarantine a subject
	Remove        key.Binding // d: release a subject
	ToggleCallers key.Binding // t: the callers sentinel
	ToggleTargets key.Binding // T: the targets sentinel
	Enforcement   key.Binding // E: the master switch, on any view

	Confirm key.Binding
	Cancel  key.Binding

	NextField key.Binding
	PrevField key.Binding
	Submit    key.Binding
}

// DefaultKeyMap returns the dashboard's bindings.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Quit:    key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:    key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		NextTab: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next view")),
		PrevTab: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "previous view")),
		Tabs:    key.NewBinding(key.WithKeys("1", "2", "3", "4", "5", "6"), key.WithHelp("1-6", "views")),
		Refresh: key.NewBinding(key.WithKeys("r", "ctrl+r"), key.WithHelp("r", "refresh now")),

		Up:       key.NewBinding(key.WithKeys("up", "k"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("down", "j"), key.WithHelp("↓/j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+b"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+f", " "), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("home", "g"), key.WithHelp("g/home", "first row")),
		Bottom:   key.NewBinding(key.WithKeys("end", "G"), key.WithHelp("G/end", "last row")),

		Filter: key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Back:   key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back/clear")),
		Sort:   key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "sort")),
		Detail: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "details")),
		Jump:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "group's limits")),
		Limits: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "its limit")),

		Toggle:        key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "enable/disable")),
		Edit:          key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "change")),
		Add:           key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "quarantine…")),
		Remove:        key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "release")),
		ToggleCallers: key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "callers on/off")),
		ToggleTargets: key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "targets on/off")),
		Enforcement:   key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "enforcement on/off")),

		Confirm: key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "confirm")),
		Cancel:  key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n/esc", "cancel")),

		NextField: key.NewBinding(key.WithKeys("tab", "down"), key.WithHelp("tab", "next field")),
		PrevField: key.NewBinding(key.WithKeys("shift+tab", "up"), key.WithHelp("shift+tab", "previous field")),
		Submit:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "next/submit")),
	}
}

// SetReadOnly disables (or enables again) every binding that changes
// something on the server.
func (k *KeyMap) SetReadOnly(ro bool) {
	for _, b := range []*key.Binding{&k.Toggle, &k.Edit, &k.Add, &k.Remove, &k.ToggleCallers, &k.ToggleTargets, &k.Enforcement} {
		b.SetEnabled(!ro)
	}
}

// viewHelp adapts the KeyMap to bubbles/help for one view: the footer shows
// what that view can do, the full help everything.
type viewHelp struct {
	k   KeyMap
	tab tab
}

func (h viewHelp) ShortHelp() []key.Binding {
	k := h.k
	// Help and quit first: the help bubble cuts from the end when the
	// line is too long.
	out := []key.Binding{k.Help, k.Quit, k.Filter}
	switch h.tab {
	case tabLimits:
		out = append(out, k.Detail, k.Toggle, k.Sort, k.Edit)
	case tabMembers:
		out = append(out, k.Jump, k.Sort)
	case tabQuarantine:
		out = append(out, k.Add, k.Remove, k.ToggleCallers, k.ToggleTargets)
	case tabAdmins:
		out = append(out, k.Sort)
	case tabIncidents:
		out = append(out, k.Limits, k.Add, k.Sort)
	}
	return out
}

func (h viewHelp) FullHelp() [][]key.Binding {
	k := h.k
	return [][]key.Binding{
		{k.Tabs, k.NextTab, k.PrevTab, k.Refresh, k.Enforcement, k.Help, k.Quit},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom},
		{k.Filter, k.Back, k.Sort, k.Detail, k.Jump, k.Limits, k.Toggle, k.Edit, k.Add, k.Remove, k.ToggleCallers, k.ToggleTargets},
	}
}

var _ help.KeyMap = viewHelp{}
