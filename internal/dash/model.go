package dash

import (
	"context"
	"errors"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

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
	tabIncidents
	numTabs
)

var tabNames = [numTabs]string{"Limits", "Members", "Quarantine", "Admins", "Audit", "Incidents"}

// tabResource is what each view shows, refreshed while it is on screen
// (Incidents loads the quarantine list too: tabExtra).
var tabResource = [numTabs]resource{resDefinitions, resMemberships, resQuarantine, resAdmins, resAudit, resEvents}

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
	incidents  incidentsView

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
	editOpen    bool
	edit        limitForm
	confirmOpen bool
	confirm     confirmDialog
	showHelp    bool
	sending     []string // verbs of mutations awaiting the server's answer
	status      status

	// groupsOpen: the Members view's groups form (c) is open.
	groupsOpen bool
	groups     groupsForm
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
	m.incidents = newIncidentsView(m.keys, m.styles, m.now)
	m.width, m.height = 80, 24
	m.layout()
	return m
}

// Init starts the refresh loop: the first tick comes at once.
func (m Model) Init() tea.Cmd {
	return func() tea.Msg { return tickMsg(m.now()) }
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
			m.incidents.SetQuarantine(msg.list)
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
	case eventsMsg:
		if m.accept(resEvents, msg.reply) {
			if msg.err != nil {
				cmd = m.fail(resEvents, msg.reply)
				break
			}
			m.incidents.SetEvents(msg.events, msg.more)
			m.succeed(resEvents)
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
				counters: msg.counters, countersTruncated: msg.countersTruncated, countersOK: msg.countersOK, countersErr: msg.countersErr}
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

// Err is why the dashboard stopped on its own, or nil when the user quit.
func (m Model) Err() error { return m.fatal }

var resourceNames = [numResources]string{"definitions", "memberships", "quarantine", "admins", "audit", "role", "details", "enforcement", "events"}

// setViewer switches to read-only: the mutating keys disappear.
func (m *Model) setViewer() {
	m.role = roleViewer
	m.keys.SetReadOnly(true)
	m.formOpen, m.editOpen, m.confirmOpen, m.groupsOpen = false, false, false, false
}

// readOnly reports whether mutations are hidden.
func (m Model) readOnly() bool { return m.role == roleViewer }
