package dash

import (
	"errors"
	"net/http"
	"time"

	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

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
	case tabIncidents:
		return m.incidents.list.Filtering()
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
	case m.editOpen:
		var cmd tea.Cmd
		m.edit, cmd = m.edit.Update(k)
		switch m.edit.State() {
		case formSubmitted:
			m.editOpen = false
			act, changed := editAction(m.edit)
			if !changed {
				m.status = status{text: "nothing to change in " + definitionID(m.edit.def)}
				break
			}
			m.openConfirm(act)
		case formCanceled:
			m.editOpen = false
			m.status = status{text: "canceled: change " + definitionID(m.edit.def)}
		}
		return m, cmd
	case m.groupsOpen:
		var cmd tea.Cmd
		m.groups, cmd = m.groups.Update(k)
		switch m.groups.State() {
		case formSubmitted:
			m.groupsOpen = false
			act, changed := groupsAction(m.groups)
			if !changed {
				m.status = status{text: "nothing to change in " + m.groups.m.Key()}
				break
			}
			m.openConfirm(act)
		case formCanceled:
			m.groupsOpen = false
			m.status = status{text: "canceled: set the groups of " + m.groups.m.Key()}
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
	case tabIncidents:
		m.incidents, cmd = m.incidents.Update(k)
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
		if key.Matches(k, m.keys.Edit) {
			d, ok := m.limits.Selected()
			switch {
			case !ok:
				return nil, true
			case !editable(d):
				m.status = status{text: "a quarantine kill switch carries no limits: e turns it on or off", err: true}
				return nil, true
			}
			return m.openEdit(newLimitForm(d, m.keys, m.styles)), true
		}
	case tabMembers:
		if key.Matches(k, m.keys.Edit) {
			mem, ok := m.members.SelectedMembership()
			if !ok {
				return nil, true
			}
			if mem.SubjectType == ratelimit.SubjectServer || mem.SubjectType == ratelimit.SubjectAgent {
				m.status = status{text: "a server or agent is only ever quarantined: use the Quarantine view", err: true}
				return nil, true
			}
			m.groups = newGroupsForm(mem, m.keys, m.styles)
			m.groups.SetSize(m.width, m.height)
			m.groupsOpen = true
			return m.groups.focus(), true
		}
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
	case tabIncidents:
		return m.handleIncidentKey(k)
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

// openEditKeeping opens the limit form as it was, its focus set by focus.
func (m *Model) openEditKeeping(f limitForm, focus tea.Cmd) tea.Cmd {
	m.edit = f
	m.edit.SetSize(m.width, m.height)
	m.editOpen = true
	return focus
}

// openEdit opens the limit form, focused on its first field.
func (m *Model) openEdit(f limitForm) tea.Cmd {
	m.edit = f
	m.edit.SetSize(m.width, m.height)
	m.editOpen = true
	return m.edit.setFocus(m.edit.focus)
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
		var apiErr *client.APIError
		if msg.act.edit != nil && errors.As(msg.err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest {
			// Refused as invalid (a floor, say): back to the form, with
			// each problem under its field.
			f := *msg.act.edit
			problems := make([]fieldProblem, len(apiErr.Errors))
			for i, fe := range apiErr.Errors {
				problems[i] = fieldProblem{fe.Field, fe.Message}
			}
			focus := f.SetErrors(problems, errorText(msg.err))
			m.status = status{text: text, err: true}
			return m.openEditKeeping(f, focus)
		}
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
