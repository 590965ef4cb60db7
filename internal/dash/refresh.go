package dash

import (
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

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
	if extra, ok := tabExtra[m.tab]; ok {
		cmds = append(cmds, m.issue(extra, force))
	}
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
	if extra, ok := tabExtra[m.tab]; ok && (m.loadedAt[extra].IsZero() || m.now().Sub(m.loadedAt[extra]) >= m.refresh) {
		cmds = append(cmds, m.issue(extra, false))
	}
	cmds = append(cmds, m.syncDetail(false))
	return tea.Batch(cmds...)
}
