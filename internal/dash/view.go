package dash

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// layout sizes every view for the body area.
func (m *Model) layout() {
	h := m.bodyHeight()
	m.limits.SetSize(m.width, h)
	m.members.SetSize(m.width, h)
	m.quarantine.SetSize(m.width, h)
	m.admins.SetSize(m.width, h)
	m.audit.SetSize(m.width, h)
	m.incidents.SetSize(m.width, h)
	m.help.Width = m.width
	if m.formOpen {
		m.form.SetSize(m.width, h)
	}
	if m.editOpen {
		m.edit.SetSize(m.width, h)
	}
	if m.groupsOpen {
		m.groups.SetSize(m.width, h)
	}
	if m.confirmOpen {
		m.confirm.SetSize(m.width, h)
	}
}

// bodyHeight is what is left for the view below the header, the tabs and
// the banner, and above the status line and the footer.
func (m Model) bodyHeight() int {
	h := m.height - 3 - len(m.statusLines())
	if m.bannerShown() {
		h--
	}
	return max(h, 1)
}

func (m Model) bannerShown() bool { return m.state == stateReady && m.conn == connLost }

// View renders the whole screen; no line is wider than the terminal.
func (m Model) View() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	lines := []string{m.headerView(), m.tabsView()}
	if m.bannerShown() {
		lines = append(lines, m.bannerView())
	}
	lines = append(lines, m.bodyView())
	lines = append(lines, m.statusLines()...)
	lines = append(lines, m.footerView())
	out := strings.Split(strings.Join(lines, "\n"), "\n")
	if len(out) > m.height {
		out = out[:m.height]
	}
	for i, l := range out {
		if ansi.StringWidth(l) > m.width {
			out[i] = ansi.Truncate(l, m.width, ellipsis)
		}
	}
	return strings.Join(out, "\n")
}

// headerView: title, server, context, connection state, last refresh and
// role, dropping the least useful parts when the width is short.
func (m Model) headerView() string {
	st := m.styles
	now := m.now()
	var connText string
	switch m.conn {
	case connConnecting:
		connText = st.Stale.Render("connecting")
	case connUp:
		connText = st.Connected.Render("connected")
	case connLost:
		connText = st.Lost.Render("connection lost")
	}
	refreshed := "never refreshed"
	if !m.lastOK.IsZero() {
		refreshed = "refreshed " + m.lastOK.Format("15:04:05") + " (" + shortDuration(now.Sub(m.lastOK)) + " ago)"
	}
	// Each part has a rank: when the line is too wide, the highest ranks
	// go first.
	type part struct {
		text string
		rank int
	}
	parts := []part{
		{st.Title.Render("rlctl dashboard"), 0},
		{st.Header.Render(clean(m.server)), 1},
		{connText, 0},
		{st.Header.Render(refreshed), 2},
	}
	if m.contextName != "" {
		parts = append(parts, part{st.Header.Render("context " + clean(m.contextName)), 3})
	}
	if m.readOnly() {
		parts = append(parts, part{st.Stale.Render("read-only (viewer)"), 0})
	}
	if m.enforcement != nil && !m.enforcement.Enabled {
		parts = append(parts, part{st.Lost.Render("ENFORCEMENT OFF"), 0})
	}
	join := func() string {
		texts := make([]string, len(parts))
		for i, p := range parts {
			texts[i] = p.text
		}
		return strings.Join(texts, "  ")
	}
	for rank := 3; rank > 0 && ansi.StringWidth(join()) > m.width; rank-- {
		parts = slices.DeleteFunc(parts, func(p part) bool { return p.rank == rank })
	}
	return truncate(join(), m.width)
}

func (m Model) tabsView() string {
	st := m.styles
	parts := make([]string, numTabs)
	for t := range numTabs {
		label := fmt.Sprintf("%d %s", t+1, tabNames[t])
		if t == m.tab {
			parts[t] = st.TabActive.Render("[" + label + "]")
		} else {
			parts[t] = st.TabInactive.Render(" " + label + " ")
		}
	}
	return truncate(strings.Join(parts, " "), m.width)
}

// bannerView says the connection is lost, why in a few words, when the
// next try is and how old the data on screen is.
func (m Model) bannerView() string {
	now := m.now()
	wait := m.nextRefresh.Sub(now).Round(time.Second)
	retry := "retrying now"
	if wait > 0 {
		retry = "retrying in " + shortDuration(wait)
	}
	tail := " · " + retry + " · stale: last refresh " + shortDuration(now.Sub(m.lastOK)) + " ago"
	// The longest text that fits: why matters less than when to expect
	// fresh data, so the reason goes first.
	text := " connection lost" + tail
	if m.connErr != nil {
		reason := clean(shortReason(m.connErr))
		for _, long := range []string{" connection lost (" + reason + ")" + tail, " " + reason + tail} {
			if ansi.StringWidth(long) <= m.width {
				text = long
				break
			}
		}
	}
	return m.styles.Banner.Render(pad(truncate(text, m.width), m.width, false))
}

func (m Model) bodyView() string {
	h := m.bodyHeight()
	st := m.styles
	switch m.state {
	case stateLoading:
		return placeCenter(st.Dim.Render("connecting to "+clean(m.server)+" …"), m.width, h)
	case stateError:
		msg := "cannot load from " + clean(m.server)
		detail := ""
		if m.connErr != nil {
			detail = errorText(m.connErr)
		} else if m.status.err {
			detail = m.status.text
		}
		wait := max(m.nextRefresh.Sub(m.now()).Round(time.Second), 0)
		box := []string{st.StatusErr.Render(msg)}
		box = append(box, wrapText(clean(detail), max(m.width-8, 10), 4)...)
		box = append(box, "",
			st.Dim.Render(fmt.Sprintf("retrying in %s (attempt %d) · r retry now · q quit", shortDuration(wait), m.failures+1)))
		return placeCenter(st.Dialog.Render(strings.Join(box, "\n")), m.width, h)
	}
	switch {
	case m.confirmOpen:
		return placeCenter(m.confirm.View(), m.width, h)
	case m.formOpen:
		return placeCenter(m.form.View(), m.width, h)
	case m.editOpen:
		return placeCenter(m.edit.View(), m.width, h)
	case m.groupsOpen:
		return placeCenter(m.groups.View(), m.width, h)
	case m.showHelp:
		hm := m.help
		hm.ShowAll = true
		box := st.DialogTitle.Render("Keys") + "\n\n" + hm.View(viewHelp{k: *m.keys, tab: m.tab}) +
			"\n\n" + st.Dim.Render(filterHelp) + "\n" + st.Dim.Render("any key closes this help")
		return placeCenter(st.Dialog.Render(box), m.width, h)
	}
	var body string
	switch m.tab {
	case tabLimits:
		body = m.limits.View()
	case tabMembers:
		body = m.members.View()
	case tabQuarantine:
		body = m.quarantine.View()
	case tabAdmins:
		body = m.admins.View()
	case tabAudit:
		body = m.audit.View()
	case tabIncidents:
		body = m.incidents.View()
	}
	return fitLines(strings.Split(body, "\n"), m.width, h)
}

// filterHelp explains the filter syntax in the full help.
const filterHelp = "filter: words match anywhere; field:value matches one field exactly,\ne.g. group:developers axis:caller enabled:no (Limits), type:user (Members)"

// maxStatusLines is how many lines a long answer from the server may take:
// an error message cut in the middle is no use to an operator.
const maxStatusLines = 2

// statusLines is the answer to the last thing the user did: always one
// line (blank when there is nothing to say), two when it is long.
func (m Model) statusLines() []string {
	st := m.styles
	var (
		text  string
		style = st.StatusOK
	)
	switch {
	case len(m.sending) > 0:
		text, style = "sending: "+strings.Join(m.sending, ", ")+" …", st.Stale
	case m.status.text == "":
		return []string{""}
	case m.status.err:
		text, style = "✗ "+m.status.text, st.StatusErr
	default:
		text = "✓ " + m.status.text
	}
	n := maxStatusLines
	if m.height < 20 {
		n = 1
	}
	lines := wrapText(clean(text), m.width, n)
	for i, l := range lines {
		lines[i] = style.Render(l)
	}
	if len(lines) == 0 {
		return []string{""}
	}
	return lines
}

func (m Model) footerView() string {
	st := m.styles
	switch {
	case m.state != stateReady:
		return st.Dim.Render(truncate("r retry now · q quit", m.width))
	case m.confirmOpen:
		return st.Dim.Render(truncate("y confirm · n/esc cancel", m.width))
	case m.formOpen, m.editOpen:
		return st.Dim.Render(truncate("tab next field · enter submit on the last field · esc cancel", m.width))
	case m.groupsOpen:
		return st.Dim.Render(truncate("enter save · esc cancel", m.width))
	case m.activeFiltering():
		return st.Dim.Render(truncate("type to filter · enter keep filter · esc clear · ↑/↓ move", m.width))
	}
	return truncate(m.help.View(viewHelp{k: *m.keys, tab: m.tab}), m.width)
}
