package dash

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// tab is one of the dashboard's views.
type tab int

const (
	tabLimits tab = iota
	tabMembers
	tabQuarantine
	tabAdmins
	tabAudit
	numTabs
)

var tabNames = [numTabs]string{"Limits", "Members", "Quarantine", "Admins", "Audit"}

// tabResource is what each view shows, refreshed while it is on screen.
var tabResource = [numTabs]resource{resDefinitions, resMemberships, resQuarantine, resAdmins, resAudit}

// appState is the root model's state: loading until the first answer,
// error when the first load failed (retrying), ready once data arrived.
type appState int

const (
	stateLoading appState = iota
	stateError
	stateReady
)

// connState is what the header says about the connection.
type connState int

const (
	connConnecting connState = iota
	connUp
	connLost
)

// role is what the token may do, as far as the dashboard knows.
type role int

const (
	roleUnknown role = iota
	roleAdmin
	roleViewer
)

// Limits of the refresh backoff after failures.
const (
	maxBackoff    = 30 * time.Second
	minTickPeriod = time.Second
)

// status is the one-line answer to the last thing the user did.
type status struct {
	text string
	err  bool
}

// Config is what a Model needs besides the server.
type Config struct {
	API     API
	Server  string // shown in the header
	Context string // the rlctl context in use, shown in the header
	// Refresh is the background refresh interval (default 2s).
	Refresh time.Duration
	// Timeout bounds each call to the server (default 30s).
	Timeout time.Duration
	// Now is the clock; tests fix it so views render the same every time.
	Now    func() time.Time
	Styles Styles
}

// Model is the dashboard's root model.
type Model struct {
	ctx         context.Context
	api         API
	server      string
	contextName string
	refresh     time.Duration
	timeout     time.Duration
	now         func() time.Time

	keys   *KeyMap
	styles *Styles
	help   help.Model

	state         appState
	width, height int
	tab           tab

	limits     limitsView
	members    membersView
	quarantine quarantineView
	admins     adminsView
	audit      auditView

	// Refresh bookkeeping: a generation and an in-flight flag per
	// resource, when each last loaded, and the round of refreshes that
	// last counted as a failure.
	gens        [numResources]uint64
	inflight    [numResources]bool
	loadedAt    [numResources]time.Time
	round       uint64
	failedRound uint64
	failures    int
	nextRefresh time.Time
	lastOK      time.Time
	conn        connState
	connErr     error
	// fatal is why the dashboard stopped on its own: the server refused
	// the token (401) or its role may not read (403). Run returns it.
	fatal error

	role role
	// enforcement is the master switch as last loaded; nil until then.
	enforcement *ratelimit.Enforcement

	formOpen    bool
	form        quarantineForm
	confirmOpen bool
	confirm     confirmDialog
	showHelp    bool
	sending     []string // verbs of mutations awaiting the server's answer
	status      status
}

// New returns the root model. ctx bounds every call it makes.
func New(ctx context.Context, cfg Config) Model {
	if cfg.Refresh <= 0 {
		cfg.Refresh = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	keys := DefaultKeyMap()
	styles := cfg.Styles
	h := help.New()
	h.Styles = styles.Help
	h.FullSeparator = "  "
	m := Model{
		ctx: ctx, api: cfg.API, server: cfg.Server, contextName: cfg.Context,
		refresh: cfg.Refresh, timeout: cfg.Timeout, now: cfg.Now,
		keys: &keys, styles: &styles, help: h,
	}
	m.limits = newLimitsView(m.keys, m.styles, m.now)
	m.members = newMembersView(m.keys, m.styles, m.now)
	m.quarantine = newQuarantineView(m.keys, m.styles, m.now)
	m.admins = newAdminsView(m.keys, m.styles, m.now)
	m.audit = newAuditView(m.keys, m.styles, m.now)
	m.width, m.height = 80, 24
	m.layout()
	return m
}

// Init starts the refresh loop: the first tick comes at once.
func (m Model) Init() tea.Cmd {
	return func() tea.Msg { return tickMsg(m.now()) }
}

// tickPeriod is how often the clock ticks: the refresh interval, at most a
// second so the header's "ago" stays current.
func (m Model) tickPeriod() time.Duration { return min(m.refresh, minTickPeriod) }

// backoff is the wait before retry number n after failures: the refresh
// interval doubled each time, up to maxBackoff.
func (m Model) backoff(n int) time.Duration {
	d := max(m.refresh, time.Second)
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// Update is the whole state machine: message in, state out.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyMsg:
		m, cmd = m.handleKey(msg)
	case tickMsg:
		cmd = tea.Batch(tick(m.tickPeriod()), m.maybeRefresh())
	case definitionsMsg:
		if m.accept(resDefinitions, msg.reply) {
			if msg.err != nil {
				cmd = m.fail(resDefinitions, msg.reply)
				break
			}
			m.limits.SetDefinitions(msg.defs)
			m.succeed(resDefinitions)
			cmd = m.syncDetail(false)
		}
	case membershipsMsg:
		if m.accept(resMemberships, msg.reply) {
			if msg.err != nil {
				cmd = m.fail(resMemberships, msg.reply)
				break
			}
			if msg.rows != nil {
				m.members.list.SetIndexed(*msg.rows)
			} else {
				m.members.SetMemberships(msg.memberships)
			}
			m.succeed(resMemberships)
		}
	case quarantineMsg:
		if m.accept(resQuarantine, msg.reply) {
			if msg.err != nil {
				cmd = m.fail(resQuarantine, msg.reply)
				break
			}
			m.quarantine.SetQuarantine(msg.list)
			m.succeed(resQuarantine)
		}
	case adminsMsg:
		if m.accept(resAdmins, msg.reply) {
			if msg.err != nil {
				cmd = m.fail(resAdmins, msg.reply)
				break
			}
			m.admins.SetAdmins(msg.admins)
			m.succeed(resAdmins)
		}
	case auditMsg:
		if m.accept(resAudit, msg.reply) {
			if msg.err != nil {
				cmd = m.fail(resAudit, msg.reply)
				break
			}
			switch {
			case msg.after == 0:
				m.audit.SetEntries(msg.entries)
			case msg.after == m.audit.Newest():
				m.audit.Append(msg.entries)
			}
			m.succeed(resAudit)
		}
	case roleMsg:
		if m.accept(resRole, msg.reply) {
			switch {
			case msg.err == nil:
				m.role = roleAdmin
			case isRoleRefusal(msg.err):
				m.setViewer()
			case errors.Is(msg.err, client.ErrUnauthorized):
				cmd = m.stop(msg.err)
			}
		}
	case detailMsg:
		if m.accept(resDetail, msg.reply) && msg.id == m.limits.detail.id {
			m.limits.detail = definitionDetail{id: msg.id, memberships: msg.memberships, moreMembers: msg.moreMembers, membersErr: msg.membersErr,
				counters: msg.counters, countersOK: msg.countersOK, countersErr: msg.countersErr}
		}
	case enforcementMsg:
		// A failed load keeps what is known: the other loads report outages.
		if m.accept(resEnforcement, msg.reply) && msg.err == nil {
			e := msg.enforcement
			m.enforcement = &e
		}
	case mutationMsg:
		cmd = m.finishMutation(msg)
	}
	m.layout()
	return m, cmd
}

// accept reports whether a reply answers the latest request for res, and
// if so marks that request done. Stale replies are dropped.
func (m *Model) accept(res resource, r reply) bool {
	if r.gen != m.gens[res] {
		return false
	}
	m.inflight[res] = false
	return true
}

func (m *Model) succeed(res resource) {
	now := m.now()
	m.loadedAt[res], m.lastOK = now, now
	if m.conn != connUp {
		m.conn, m.connErr, m.failures = connUp, nil, 0
		m.nextRefresh = now.Add(m.refresh)
	}
	m.state = stateReady
}

// fail records a failed load: an outage turns the connection state to lost
// and backs the refresh off (once per round); anything else is reported in
// the status line and the data on screen stays.
func (m *Model) fail(res resource, r reply) tea.Cmd {
	if isAuthFailure(r.err) {
		return m.stop(r.err)
	}
	if !isOutage(r.err) {
		if isRoleRefusal(r.err) {
			m.setViewer()
		}
		m.status = status{text: resourceNames[res] + ": " + errorText(r.err), err: true}
		if m.state == stateLoading {
			m.state = stateError
		}
		return nil
	}
	m.conn, m.connErr = connLost, r.err
	if r.round > m.failedRound {
		m.failedRound = r.round
		m.failures++
		m.nextRefresh = m.now().Add(m.backoff(m.failures))
	}
	if m.state == stateLoading {
		m.state = stateError
	}
	return nil
}

// stop ends the program with err: retrying a refused token only feeds
// the server's failed-auth lockout, which then locks every rlctl on this
// address out, valid tokens included.
func (m *Model) stop(err error) tea.Cmd {
	m.fatal = err
	return tea.Quit
}

// Err is why the dashboard stopped on its own, or nil when the user quit.
func (m Model) Err() error { return m.fatal }

var resourceNames = [numResources]string{"definitions", "memberships", "quarantine", "admins", "audit", "role", "details", "enforcement"}

// setViewer switches to read-only: the mutating keys disappear.
func (m *Model) setViewer() {
	m.role = roleViewer
	m.keys.SetReadOnly(true)
	m.formOpen, m.confirmOpen = false, false
}

// readOnly reports whether mutations are hidden.
func (m Model) readOnly() bool { return m.role == roleViewer }

// issue starts loading res unless a load is already under way; force
// starts a new one regardless, and the older answer will be dropped.
func (m *Model) issue(res resource, force bool) tea.Cmd {
	if m.inflight[res] && !force {
		return nil
	}
	if res == resDetail {
		if _, ok := m.limits.Selected(); !ok || !m.limits.detailOpen {
			return nil
		}
	}
	m.gens[res]++
	m.inflight[res] = true
	return m.loadCmd(res, reply{gen: m.gens[res], round: m.round})
}

// maybeRefresh starts a round of loads for the view on screen when it is
// time.
func (m *Model) maybeRefresh() tea.Cmd {
	if m.now().Before(m.nextRefresh) {
		return nil
	}
	return m.refreshRound(false)
}

// refreshRound loads what the current view shows (and the role while it is
// unknown).
func (m *Model) refreshRound(force bool) tea.Cmd {
	m.round++
	m.nextRefresh = m.now().Add(m.refresh)
	if m.conn == connLost {
		m.nextRefresh = m.now().Add(m.backoff(m.failures + 1))
	}
	cmds := []tea.Cmd{m.issue(tabResource[m.tab], force)}
	if m.tab == tabLimits && m.limits.detailOpen {
		cmds = append(cmds, m.issue(resDetail, force))
	}
	if m.role == roleUnknown {
		cmds = append(cmds, m.issue(resRole, false))
	}
	cmds = append(cmds, m.issue(resEnforcement, false))
	return tea.Batch(cmds...)
}

// syncDetail loads the pane's extras when the pane shows a definition it
// has not loaded them for.
func (m *Model) syncDetail(force bool) tea.Cmd {
	if m.tab != tabLimits || !m.limits.detailOpen {
		return nil
	}
	d, ok := m.limits.Selected()
	if !ok {
		return nil
	}
	if id := definitionID(d); force || id != m.limits.detail.id {
		m.limits.detail = definitionDetail{id: id, loading: true}
		return m.issue(resDetail, true)
	}
	return nil
}

// switchTab shows tab t and loads its data when it is missing or old.
func (m *Model) switchTab(t tab) tea.Cmd {
	m.tab = (t + numTabs) % numTabs
	res := tabResource[m.tab]
	var cmds []tea.Cmd
	if m.loadedAt[res].IsZero() || m.now().Sub(m.loadedAt[res]) >= m.refresh {
		cmds = append(cmds, m.issue(res, false))
	}
	cmds = append(cmds, m.syncDetail(false))
	return tea.Batch(cmds...)
}

// activeFiltering reports whether the view on screen has the filter input
// open, so keys are text.
func (m Model) activeFiltering() bool {
	switch m.tab {
	case tabLimits:
		return m.limits.list.Filtering()
	case tabMembers:
		return m.members.list.Filtering()
	case tabQuarantine:
		return m.quarantine.list.Filtering()
	case tabAdmins:
		return m.admins.list.Filtering()
	case tabAudit:
		return m.audit.list.Filtering()
	}
	return false
}

// handleKey routes a key: open dialogs first, then the filter input, then
// the global keys, then the view's own.
func (m Model) handleKey(k tea.KeyMsg) (Model, tea.Cmd) {
	if k.Type == tea.KeyCtrlC {
		return m, tea.Quit
	}
	switch {
	case m.confirmOpen:
		var cmd tea.Cmd
		m.confirm, cmd = m.confirm.Update(k)
		switch m.confirm.Answer() {
		case confirmYes:
			m.confirmOpen = false
			act := m.confirm.Action()
			m.sending = append(m.sending, act.verb)
			m.status = status{}
			return m, m.runAction(act)
		case confirmNo:
			m.confirmOpen = false
			m.status = status{text: "canceled: " + m.confirm.Action().verb}
		}
		return m, cmd
	case m.formOpen:
		var cmd tea.Cmd
		m.form, cmd = m.form.Update(k)
		switch m.form.State() {
		case formSubmitted:
			m.formOpen = false
			m.openConfirm(quarantineAction(m.form.Request()))
		case formCanceled:
			m.formOpen = false
			m.status = status{text: "canceled: quarantine"}
		}
		return m, cmd
	case m.showHelp:
		if key.Matches(k, m.keys.Quit) && k.String() == "q" {
			return m, tea.Quit
		}
		m.showHelp = false
		return m, nil
	}

	if m.state != stateReady {
		switch {
		case key.Matches(k, m.keys.Quit):
			return m, tea.Quit
		case key.Matches(k, m.keys.Refresh):
			return m, m.refreshRound(true)
		}
		return m, nil
	}

	if !m.activeFiltering() {
		switch {
		case key.Matches(k, m.keys.Quit):
			return m, tea.Quit
		case key.Matches(k, m.keys.Help):
			m.showHelp = true
			return m, nil
		case key.Matches(k, m.keys.NextTab):
			return m, m.switchTab(m.tab + 1)
		case key.Matches(k, m.keys.PrevTab):
			return m, m.switchTab(m.tab - 1)
		case key.Matches(k, m.keys.Tabs):
			return m, m.switchTab(tab(k.Runes[0] - '1'))
		case key.Matches(k, m.keys.Refresh):
			return m, tea.Batch(m.refreshRound(true), m.syncDetail(true))
		case key.Matches(k, m.keys.Enforcement):
			if m.enforcement == nil {
				m.status = status{text: "the enforcement switch has not loaded yet", err: true}
				return m, m.issue(resEnforcement, false)
			}
			m.openConfirm(enforcementAction(m.enforcement.Enabled))
			return m, nil
		}
		if cmd, handled := m.handleActionKey(k); handled {
			return m, cmd
		}
	}

	var cmd tea.Cmd
	switch m.tab {
	case tabLimits:
		m.limits, cmd = m.limits.Update(k)
		return m, tea.Batch(cmd, m.syncDetail(false))
	case tabMembers:
		m.members, cmd = m.members.Update(k)
	case tabQuarantine:
		m.quarantine, cmd = m.quarantine.Update(k)
	case tabAdmins:
		m.admins, cmd = m.admins.Update(k)
	case tabAudit:
		m.audit, cmd = m.audit.Update(k)
	}
	return m, cmd
}

// handleActionKey handles the keys that act on the selected row: the
// mutations (each through a confirmation) and the jump from a group.
func (m *Model) handleActionKey(k tea.KeyMsg) (tea.Cmd, bool) {
	switch m.tab {
	case tabLimits:
		if key.Matches(k, m.keys.Toggle) {
			if d, ok := m.limits.Selected(); ok {
				m.openConfirm(toggleAction(d))
			}
			return nil, true
		}
	case tabMembers:
		if key.Matches(k, m.keys.Jump) {
			g, ok := m.members.SelectedGroup()
			if !ok {
				m.status = status{text: "this subject is in no group", err: true}
				return nil, true
			}
			m.limits.list.SetQuery("group:" + g)
			m.limits.SetDetailOpen(false)
			m.status = status{text: "definitions of group " + g + " (esc clears the filter)"}
			return m.switchTab(tabLimits), true
		}
	case tabQuarantine:
		switch {
		case key.Matches(k, m.keys.Add):
			m.form = newQuarantineForm(m.keys, m.styles)
			m.form.SetSize(m.width, m.height)
			m.formOpen = true
			return m.form.setFocus(fieldType), true
		case key.Matches(k, m.keys.Remove):
			if r, ok := m.quarantine.Selected(); ok {
				m.openConfirm(releaseAction(r))
			}
			return nil, true
		case key.Matches(k, m.keys.ToggleCallers):
			if m.quarantine.loaded {
				m.openConfirm(sentinelAction("callers", m.quarantine.callersEnabled))
			}
			return nil, true
		case key.Matches(k, m.keys.ToggleTargets):
			if m.quarantine.loaded {
				m.openConfirm(sentinelAction("targets", m.quarantine.targetsEnabled))
			}
			return nil, true
		}
	}
	return nil, false
}

func (m *Model) openConfirm(act action) {
	m.confirm = newConfirm(act, m.keys, m.styles)
	m.confirm.SetSize(m.width, m.height)
	m.confirmOpen = true
}

// finishMutation reports the server's answer and reloads what changed.
func (m *Model) finishMutation(msg mutationMsg) tea.Cmd {
	for i, v := range m.sending {
		if v == msg.act.verb {
			m.sending = append(m.sending[:i:i], m.sending[i+1:]...)
			break
		}
	}
	if msg.err != nil {
		if errors.Is(msg.err, client.ErrUnauthorized) {
			return m.stop(msg.err)
		}
		text := msg.act.verb + ": " + errorText(msg.err)
		if isRoleRefusal(msg.err) {
			m.setViewer()
			text += " (read-only from now on)"
		}
		m.status = status{text: text, err: true}
		if isOutage(msg.err) {
			m.conn, m.connErr = connLost, msg.err
		}
		return nil
	}
	m.status = status{text: msg.result}
	var cmds []tea.Cmd
	for _, res := range msg.act.refresh {
		switch res {
		case resDetail:
			cmds = append(cmds, m.syncDetail(true))
		case tabResource[m.tab], resEnforcement:
			cmds = append(cmds, m.issue(res, true))
		default:
			// Not on screen: reload when next shown.
			m.loadedAt[res] = time.Time{}
		}
	}
	return tea.Batch(cmds...)
}

// layout sizes every view for the body area.
func (m *Model) layout() {
	h := m.bodyHeight()
	m.limits.SetSize(m.width, h)
	m.members.SetSize(m.width, h)
	m.quarantine.SetSize(m.width, h)
	m.admins.SetSize(m.width, h)
	m.audit.SetSize(m.width, h)
	m.help.Width = m.width
	if m.formOpen {
		m.form.SetSize(m.width, h)
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
	case m.formOpen:
		return st.Dim.Render(truncate("tab next field · enter submit on the last field · esc cancel", m.width))
	case m.activeFiltering():
		return st.Dim.Render(truncate("type to filter · enter keep filter · esc clear · ↑/↓ move", m.width))
	}
	return truncate(m.help.View(viewHelp{k: *m.keys, tab: m.tab}), m.width)
}
