package dash

import (
	"cmp"
	"context"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The Incidents view: who is hitting the limits now. It reads the record
// of violations of the last incidentWindow (GET /api/rate-limit-events,
// one row per minute, kind, subject and definition) and the quarantine
// list (for the live lockouts), and shows a sparkline of throttles per
// minute, the limits that throttle most, the live lockouts, and a table
// of the subjects by calls refused. From a row, a quarantines the subject
// (the form, prefilled, then a confirmation) and enter opens its limit in
// the Limits view.

// incidentWindow is how far back the view looks: one sparkline bar per
// minute.
const incidentWindow = 15 * time.Minute

// eventsMsg answers a load of the record of violations.
type eventsMsg struct {
	reply
	events []ratelimit.Event
	// more: the window holds more rows than one page (the newest shown).
	more bool
}

// eventsCmd loads the window's events, newest first, one big page.
func eventsCmd(parent context.Context, timeout time.Duration, api API, since time.Time, r reply) tea.Cmd {
	return fetch(parent, timeout, func(ctx context.Context) (client.EventPage, error) {
		return api.ListEvents(ctx, client.EventFilter{Since: since, Limit: bigPage})
	}, func(v client.EventPage, err error) tea.Msg {
		r.err = err
		return eventsMsg{reply: r, events: v.Events, more: v.NextCursor != ""}
	})
}

// incidentRow is one subject's refused calls over the window.
type incidentRow struct {
	subject   string
	total     int64 // every kind
	throttled int64 // rate_limit_exceeded
	denied    int64 // quarantine_denied
	lockouts  int64 // lockout_started, auth_lockout_started
	topDef    string
	topCount  int64
	last      time.Time
}

// automaticLockout reports whether a quarantine entry is a live automatic
// lockout: active, with an expiry, and a reason that says it was set by a
// lockout ("lockout: 5 violations of caller:group:free:60 in 5m", or any
// reason starting with "lockout" or "automatic", any case). Operators'
// quarantines have free reasons and show in the Quarantine view.
func automaticLockout(e client.QuarantineEntry, now time.Time) bool {
	if e.Expired || e.ExpiresAt == nil || !now.Before(*e.ExpiresAt) {
		return false
	}
	r := strings.ToLower(strings.TrimSpace(e.Reason))
	return strings.HasPrefix(r, "lockout") || strings.HasPrefix(r, "automatic")
}

// incidentsView shows the last minutes of the record of violations.
type incidentsView struct {
	list     list[incidentRow]
	events   []ratelimit.Event
	more     bool
	loaded   bool
	lockouts []client.QuarantineEntry
	qLoaded  bool

	// spark is throttles per minute, oldest first; topDefs the limits
	// that throttled most.
	spark   []int64
	topDefs []defCount

	styles *Styles
	now    func() time.Time
	width  int
}

type defCount struct {
	id    string
	count int64
}

func newIncidentsView(keys *KeyMap, styles *Styles, now func() time.Time) incidentsView {
	spec := &listSpec[incidentRow]{
		noun: "subjects",
		one:  "subject",
		columns: []Column{
			{Title: "SUBJECT", Min: 14, Weight: 3},
			{Title: "REFUSED", Min: 7, Right: true},
			{Title: "THROTTLED", Min: 9, Right: true},
			{Title: "QUAR", Min: 5, Right: true},
			{Title: "TOP LIMIT", Min: 12, Weight: 3},
			{Title: "LAST", Min: 9},
		},
		cells: func(r incidentRow) []string {
			n := now()
			return []string{r.subject, formatCount64(r.total), formatCount64(r.throttled), formatCount64(r.denied),
				dashIfEmpty(r.topDef), formatAgo(n, &r.last)}
		},
		key:  func(r incidentRow) string { return r.subject },
		text: func(r incidentRow) string { return r.subject + " " + r.topDef },
		fields: map[string]func(incidentRow, string) bool{
			"subject": func(r incidentRow, v string) bool { return strings.EqualFold(r.subject, v) },
			"type": func(r incidentRow, v string) bool {
				t, _, _ := strings.Cut(r.subject, ":")
				return strings.EqualFold(t, callerType(v))
			},
			"limit": func(r incidentRow, v string) bool { return strings.EqualFold(r.topDef, v) },
		},
		sorts: []sortSpec[incidentRow]{
			{name: "refused", cmp: func(a, b incidentRow) int {
				return cmp.Or(cmp.Compare(b.total, a.total), cmp.Compare(a.subject, b.subject))
			}},
			{name: "throttled", cmp: func(a, b incidentRow) int { return cmp.Compare(b.throttled, a.throttled) }},
			{name: "last", cmp: func(a, b incidentRow) int { return b.last.Compare(a.last) }},
			{name: "subject", cmp: func(a, b incidentRow) int { return cmp.Compare(a.subject, b.subject) }},
		},
	}
	return incidentsView{list: newList(spec, keys, styles), styles: styles, now: now}
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func formatCount64(n int64) string { return formatCount(int(n)) }

func (v incidentsView) Init() tea.Cmd { return nil }

// incidentHeaderLines is what the view shows above its table.
const incidentHeaderLines = 3

// SetSize keeps the summary lines above the table.
func (v *incidentsView) SetSize(width, height int) {
	v.width = width
	v.list.SetSize(width, max(height-incidentHeaderLines, 0))
}

// since is where the window starts, by the view's clock.
func (v incidentsView) since() time.Time {
	return v.now().Truncate(time.Minute).Add(-incidentWindow + time.Minute)
}

// SetEvents replaces the window's events and recomputes the summaries.
func (v *incidentsView) SetEvents(evs []ratelimit.Event, more bool) {
	v.events, v.more, v.loaded = evs, more, true
	start := v.since()
	bars := int(incidentWindow / time.Minute)
	v.spark = make([]int64, bars)
	rows := map[string]*incidentRow{}
	defs := map[string]int64{}
	perSubjectDef := map[[2]string]int64{}
	for _, e := range evs {
		if e.Minute.Before(start) {
			continue
		}
		r := rows[e.Subject]
		if r == nil {
			r = &incidentRow{subject: e.Subject}
			rows[e.Subject] = r
		}
		r.total += e.Count
		switch e.Kind {
		case ratelimit.EventRateLimitExceeded:
			r.throttled += e.Count
			if i := int(e.Minute.Sub(start) / time.Minute); i >= 0 && i < bars {
				v.spark[i] += e.Count
			}
		case ratelimit.EventQuarantineDenied:
			r.denied += e.Count
		default:
			r.lockouts += e.Count
		}
		if e.LastSeen.After(r.last) {
			r.last = e.LastSeen
		}
		if e.DefinitionID != "" {
			defs[e.DefinitionID] += e.Count
			k := [2]string{e.Subject, e.DefinitionID}
			perSubjectDef[k] += e.Count
			if n := perSubjectDef[k]; n > r.topCount || (n == r.topCount && e.DefinitionID < r.topDef) {
				r.topDef, r.topCount = e.DefinitionID, n
			}
		}
	}
	out := make([]incidentRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	v.topDefs = v.topDefs[:0]
	for id, n := range defs {
		v.topDefs = append(v.topDefs, defCount{id, n})
	}
	slices.SortFunc(v.topDefs, func(a, b defCount) int { return cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(a.id, b.id)) })
	v.list.SetItems(out)
}

// SetQuarantine keeps the live automatic lockouts, soonest to end first.
func (v *incidentsView) SetQuarantine(q client.QuarantineList) {
	now := v.now()
	v.lockouts = v.lockouts[:0]
	for _, e := range append(append([]client.QuarantineEntry(nil), q.Callers...), q.Targets...) {
		if automaticLockout(e, now) {
			v.lockouts = append(v.lockouts, e)
		}
	}
	slices.SortFunc(v.lockouts, func(a, b client.QuarantineEntry) int { return a.ExpiresAt.Compare(*b.ExpiresAt) })
	v.qLoaded = true
}

// Selected is the row under the cursor.
func (v incidentsView) Selected() (incidentRow, bool) { return v.list.Selected() }

func (v incidentsView) Update(msg tea.Msg) (incidentsView, tea.Cmd) {
	var cmd tea.Cmd
	v.list, cmd = v.list.Update(msg)
	return v, cmd
}

func (v incidentsView) View() string {
	return strings.Join([]string{v.sparkLine(), v.topLine(), v.lockoutLine(), v.list.View()}, "\n")
}

// sparkBars are the sparkline's levels; a minute without throttles is a dot.
var sparkBars = []rune("▁▂▃▄▅▆▇█")

// sparkline draws counts, one cell each, scaled to the largest.
func sparkline(counts []int64) string {
	var peak int64
	for _, n := range counts {
		peak = max(peak, n)
	}
	var b strings.Builder
	for _, n := range counts {
		if n == 0 {
			b.WriteRune('·')
			continue
		}
		i := int((n*int64(len(sparkBars)) - 1) / peak)
		b.WriteRune(sparkBars[min(i, len(sparkBars)-1)])
	}
	return b.String()
}

func (v incidentsView) sparkLine() string {
	st := v.styles
	if !v.loaded {
		return truncate(st.Dim.Render("throttles per minute: loading…"), v.width)
	}
	var total, peak int64
	for _, n := range v.spark {
		total += n
		peak = max(peak, n)
	}
	line := st.Label.Render("throttles/min ") + st.Stale.Render(sparkline(v.spark)) +
		st.Dim.Render("  peak "+formatCount64(peak)+" · "+formatCount64(total)+" in "+shortDuration(incidentWindow))
	if v.more {
		// One page of the window: the counts are the newest rows'.
		line += st.Stale.Render(" · " + formatCount(bigPage) + "+ rows")
	}
	return truncate(line, v.width)
}

func (v incidentsView) topLine() string {
	st := v.styles
	if !v.loaded {
		return ""
	}
	if len(v.topDefs) == 0 {
		return truncate(st.Label.Render("top limits  ")+st.Dim.Render("none refused a call"), v.width)
	}
	parts := make([]string, 0, 3)
	for _, d := range v.topDefs[:min(len(v.topDefs), 3)] {
		parts = append(parts, clean(d.id)+" "+formatCount64(d.count))
	}
	return truncate(st.Label.Render("top limits  ")+strings.Join(parts, " · "), v.width)
}

func (v incidentsView) lockoutLine() string {
	st := v.styles
	if !v.qLoaded {
		return truncate(st.Label.Render("lockouts    ")+st.Dim.Render("loading…"), v.width)
	}
	if len(v.lockouts) == 0 {
		return truncate(st.Label.Render("lockouts    ")+st.Dim.Render("none live"), v.width)
	}
	now := v.now()
	parts := make([]string, len(v.lockouts))
	for i, e := range v.lockouts {
		parts[i] = clean(e.SubjectType+":"+e.Subject) + " " + st.Dim.Render("ends "+formatUntil(now, e.ExpiresAt))
	}
	return truncate(st.Label.Render("lockouts "+strconv.Itoa(len(v.lockouts))+"  ")+strings.Join(parts, " · "), v.width)
}

// callerType reads client, the memberships' name for a caller with a
// client id, as agent, the record's (and the API's events filter's) name
// for it; any other type is itself.
func callerType(t string) string {
	if strings.EqualFold(t, ratelimit.SubjectClient) {
		return "agent"
	}
	return t
}

// quarantineSubject is the quarantine membership a subject of the record
// is quarantined as: agents (agent:<client id>) are clients, targets are
// servers and agents, and an anonymous ip: caller is its network, exactly
// as its key says (ipNetwork).
func quarantineSubject(subject string) (subjectType, name string, ok bool) {
	typ, name, found := strings.Cut(subject, ":")
	if !found || name == "" {
		return "", "", false
	}
	switch typ {
	case ratelimit.SubjectUser:
		return ratelimit.SubjectUser, name, true
	case "agent":
		return ratelimit.SubjectClient, name, true
	case ratelimit.EntityMCPServer:
		return ratelimit.SubjectServer, name, true
	case ratelimit.EntityA2AAgent:
		return ratelimit.SubjectAgent, name, true
	case "ip":
		if cidr, ok := ipNetwork(name); ok {
			return ratelimit.SubjectNetwork, cidr, true
		}
	}
	return "", "", false
}

// ipNetwork is the network an ip:<key> caller is quarantined as, the
// bucket the key names and no wider: an IPv4 address is its /32, an IPv6
// address its /128, a network (the gateways key IPv6 by its /64) itself,
// host bits masked. An IPv4-mapped IPv6 address is its IPv4 address, as
// the gateways key it. A key that is neither is not a network.
func ipNetwork(key string) (string, bool) {
	if strings.Contains(key, "/") {
		p, err := netip.ParsePrefix(key)
		if err != nil {
			return "", false
		}
		if p.Addr().Is4In6() {
			bits := p.Bits() - 96
			if bits < 0 {
				return "", false
			}
			p = netip.PrefixFrom(p.Addr().Unmap(), bits)
		}
		return p.Masked().String(), true
	}
	a, err := netip.ParseAddr(key)
	if err != nil || a.Zone() != "" {
		return "", false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()).String(), true
}

// incidentQuarantineForm is the quarantine form filled in for r: its
// subject, a reason naming what it did, an hour; focused on the reason.
func incidentQuarantineForm(r incidentRow, keys *KeyMap, styles *Styles) (quarantineForm, bool) {
	typ, name, ok := quarantineSubject(r.subject)
	if !ok {
		return quarantineForm{}, false
	}
	f := newQuarantineForm(keys, styles)
	f.typeIdx = slices.Index(subjectTypes, typ)
	f.inputs[fieldSubject].SetValue(name)
	reason := "incident: " + formatCount64(r.total) + " calls refused in " + shortDuration(incidentWindow)
	if r.topDef != "" {
		reason += " (" + r.topDef + ")"
	}
	f.inputs[fieldReason].SetValue(reason)
	f.inputs[fieldDuration].SetValue("1h")
	f.focus = fieldReason
	return f, true
}

// tabExtra is what a view loads besides its own resource: the Incidents
// view shows the live lockouts from the quarantine list.
var tabExtra = map[tab]resource{tabIncidents: resQuarantine}

// handleIncidentKey: a quarantines the selected subject (the form,
// prefilled), enter shows its top limit in the Limits view.
func (m *Model) handleIncidentKey(k tea.KeyMsg) (tea.Cmd, bool) {
	switch {
	case key.Matches(k, m.keys.Add):
		r, ok := m.incidents.Selected()
		if !ok {
			return nil, true
		}
		f, ok := incidentQuarantineForm(r, m.keys, m.styles)
		if !ok {
			m.status = status{text: r.subject + " is not a subject the dashboard can quarantine: use the Quarantine view", err: true}
			return nil, true
		}
		m.form = f
		m.form.SetSize(m.width, m.height)
		m.formOpen = true
		return m.form.setFocus(fieldReason), true
	case key.Matches(k, m.keys.Limits):
		r, ok := m.incidents.Selected()
		if !ok {
			return nil, true
		}
		if r.topDef == "" {
			m.status = status{text: "no limit refused " + r.subject + " (quarantine did): see the Quarantine view", err: true}
			return nil, true
		}
		m.limits.list.SetQuery("id:" + r.topDef)
		m.limits.SetDetailOpen(true)
		m.status = status{text: "the limit that refused " + r.subject + " most (esc clears the filter)"}
		return tea.Batch(m.switchTab(tabLimits), m.syncDetail(true)), true
	}
	return nil, false
}
