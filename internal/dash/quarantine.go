package dash

import (
	"cmp"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
)

// quarantineRow is one quarantined caller or target.
type quarantineRow struct {
	scope string // "caller" or "target"
	e     client.QuarantineEntry
}

func (r quarantineRow) state(now time.Time) string {
	if r.e.Expired || (r.e.ExpiresAt != nil && !now.Before(*r.e.ExpiresAt)) {
		return "expired"
	}
	return "active"
}

// quarantineView lists the quarantined subjects under the state of the two
// kill switches.
type quarantineView struct {
	list           list[quarantineRow]
	callersEnabled bool
	targetsEnabled bool
	loaded         bool

	styles *Styles
	keys   *KeyMap
	now    func() time.Time
	width  int
}

func newQuarantineView(keys *KeyMap, styles *Styles, now func() time.Time) quarantineView {
	spec := &listSpec[quarantineRow]{
		noun: "quarantined subjects",
		one:  "quarantined subject",
		columns: []Column{
			{Title: "SCOPE", Min: 6},
			{Title: "SUBJECT", Min: 14, Weight: 3},
			{Title: "REASON", Min: 10, Weight: 3},
			{Title: "SINCE", Min: 9},
			{Title: "EXPIRES", Min: 10},
			{Title: "STATE", Min: 7},
		},
		cells: func(r quarantineRow) []string {
			n := now()
			return []string{r.scope, r.e.SubjectType + ":" + r.e.Subject, r.e.Reason,
				formatAgo(n, r.e.QuarantinedAt), formatUntil(n, r.e.ExpiresAt), r.state(n)}
		},
		key: func(r quarantineRow) string { return r.e.SubjectType + ":" + r.e.Subject },
		text: func(r quarantineRow) string {
			return r.scope + " " + r.e.SubjectType + ":" + r.e.Subject + " " + r.e.Reason
		},
		fields: map[string]func(quarantineRow, string) bool{
			"scope":   func(r quarantineRow, v string) bool { return strings.EqualFold(r.scope, v) },
			"type":    func(r quarantineRow, v string) bool { return strings.EqualFold(r.e.SubjectType, v) },
			"subject": func(r quarantineRow, v string) bool { return strings.EqualFold(r.e.Subject, v) },
			"state":   func(r quarantineRow, v string) bool { return r.state(now()) == v },
		},
		sorts: []sortSpec[quarantineRow]{
			{name: "scope", cmp: func(a, b quarantineRow) int { return cmp.Compare(a.scope, b.scope) }},
			{name: "since", cmp: func(a, b quarantineRow) int { return cmpTimePtr(b.e.QuarantinedAt, a.e.QuarantinedAt) }},
			{name: "expires", cmp: func(a, b quarantineRow) int { return cmpExpiry(a.e.ExpiresAt, b.e.ExpiresAt) }},
		},
	}
	return quarantineView{list: newList(spec, keys, styles), styles: styles, keys: keys, now: now}
}

// cmpExpiry sorts the soonest expiry first and "never" last.
func cmpExpiry(a, b *time.Time) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return a.Compare(*b)
}

func (v quarantineView) Init() tea.Cmd { return nil }

// SetSize keeps one line for the kill switches.
func (v *quarantineView) SetSize(width, height int) {
	v.width = width
	v.list.SetSize(width, max(height-1, 0))
}

// SetQuarantine replaces the list and the switches' state.
func (v *quarantineView) SetQuarantine(q client.QuarantineList) {
	rows := make([]quarantineRow, 0, len(q.Callers)+len(q.Targets))
	for _, e := range q.Callers {
		rows = append(rows, quarantineRow{scope: "caller", e: e})
	}
	for _, e := range q.Targets {
		rows = append(rows, quarantineRow{scope: "target", e: e})
	}
	v.callersEnabled, v.targetsEnabled, v.loaded = q.CallersEnabled, q.TargetsEnabled, true
	v.list.SetItems(rows)
}

// Selected is the row under the cursor.
func (v quarantineView) Selected() (quarantineRow, bool) { return v.list.Selected() }

func (v quarantineView) Update(msg tea.Msg) (quarantineView, tea.Cmd) {
	var cmd tea.Cmd
	v.list, cmd = v.list.Update(msg)
	return v, cmd
}

func (v quarantineView) View() string {
	return v.switchesLine() + "\n" + v.list.View()
}

// switchesLine shows whether each half of quarantine is on.
func (v quarantineView) switchesLine() string {
	st := v.styles
	if !v.loaded {
		return truncate(st.Dim.Render("kill switches: loading…"), v.width)
	}
	sw := func(label string, on bool) string {
		s := st.Off
		if on {
			s = st.On
		}
		return st.Label.Render(label+" ") + s.Render(onOff(on))
	}
	line := st.Label.Render("kill switches: ") + sw("callers", v.callersEnabled) + "  " + sw("targets", v.targetsEnabled)
	if v.keys.ToggleCallers.Enabled() {
		line += st.Dim.Render("   (t / T to switch)")
	}
	return truncate(line, v.width)
}
