package dash

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// API is the part of the SDK the dashboard uses; *client.Client implements
// it, and tests can stand in for it.
type API interface {
	ListAllDefinitions(ctx context.Context, f client.DefinitionFilter) ([]ratelimit.Definition, error)
	SetDefinitionEnabled(ctx context.Context, id string, enabled bool, o client.WriteOptions) (ratelimit.Definition, *client.DryRunReport, error)
	PutDefinition(ctx context.Context, d ratelimit.Definition, o client.WriteOptions) (client.PutResult[ratelimit.Definition], error)
	ListAllMemberships(ctx context.Context, f client.MembershipFilter) ([]ratelimit.Membership, error)
	ListMemberships(ctx context.Context, f client.MembershipFilter) (client.MembershipPage, error)
	PutMembership(ctx context.Context, m ratelimit.Membership, o client.WriteOptions) (client.PutResult[ratelimit.Membership], error)
	ListQuarantine(ctx context.Context) (client.QuarantineList, error)
	Quarantine(ctx context.Context, subjectType, subject string, q client.QuarantineRequest, o client.WriteOptions) (client.QuarantineResult, error)
	Unquarantine(ctx context.Context, subjectType, subject string, o client.WriteOptions) (bool, *client.DryRunReport, error)
	ListAdmins(ctx context.Context) ([]ratelimit.Admin, error)
	ListAudit(ctx context.Context, f client.AuditFilter) (client.AuditPage, error)
	ListTokens(ctx context.Context) ([]ratelimit.Token, error)
	ListCounters(ctx context.Context, sel client.CounterSelector, limit int) (client.CounterList, error)
	GetEnforcement(ctx context.Context) (ratelimit.Enforcement, error)
	SetEnforcement(ctx context.Context, enabled bool, reason string, o client.WriteOptions) (ratelimit.Enforcement, *client.DryRunReport, error)
	ListEvents(ctx context.Context, f client.EventFilter) (client.EventPage, error)
}

var _ API = (*client.Client)(nil)

// resource is one thing the dashboard loads from the server. Each has its
// own generation counter: a reply is applied only when it answers the
// latest request for that resource, so a slow answer to an old request
// never overwrites a newer one.
type resource int

const (
	resDefinitions resource = iota
	resMemberships
	resQuarantine
	resAdmins
	resAudit
	resRole
	resDetail
	resEnforcement // the master switch, shown in the header
	resEvents      // the record of violations (Incidents)
	numResources
)

// bigPage is the page size for the full lists: the server's largest, so
// 100,000 memberships take ten requests, not a hundred.
const bigPage = 10000

// detailMemberships is how many memberships of a group the Limits pane
// loads.
const detailMemberships = 500

// auditPage is how many audit entries the first load asks for, and how
// many new ones each refresh may bring.
const auditPage = 200

// reply is what every loading message carries.
type reply struct {
	gen   uint64 // the request's generation, per resource
	round uint64 // the refresh round that asked, to count failures once
	err   error
}

// Messages with data from the server.
type (
	definitionsMsg struct {
		reply
		defs []ratelimit.Definition
	}
	membershipsMsg struct {
		reply
		memberships []ratelimit.Membership
		// rows is the Members view's index of them, built in the command;
		// nil when the message was made without it.
		rows *indexed[memberRow]
	}
	quarantineMsg struct {
		reply
		list client.QuarantineList
	}
	adminsMsg struct {
		reply
		admins []ratelimit.Admin
	}
	// auditMsg answers a first load (after 0, newest first) or a follow-up
	// (entries after the id, oldest first).
	auditMsg struct {
		reply
		after   int64
		entries []ratelimit.AuditEntry
	}
	// roleMsg answers the upfront role check: ListTokens needs an admin
	// token, so 403 means read-only.
	roleMsg struct {
		reply
	}
	detailMsg struct {
		reply
		id          string
		memberships []ratelimit.Membership
		moreMembers bool
		membersErr  error
		counters    []client.Counter
		// countersTruncated: the server stopped before it had seen
		// every counter (more than it lists, or a bounded Redis scan).
		countersTruncated bool
		countersOK        bool
		countersErr       error
	}
	// enforcementMsg answers a load of the master switch.
	enforcementMsg struct {
		reply
		enforcement ratelimit.Enforcement
	}
	// mutationMsg is the server's answer to a confirmed change.
	mutationMsg struct {
		act    action
		result string
		err    error
	}
	// tickMsg drives the background refresh and the clock in the header.
	tickMsg time.Time
)

// action is one change to make on the server, described for the
// confirmation dialog and the status line.
type action struct {
	question string   // "Disable caller:group:dev:60?"
	details  []string // what it does, one line each
	verb     string   // "disable caller:group:dev:60", for the status line
	run      func(ctx context.Context, api API) (string, error)
	refresh  []resource
	// edit is the limit form that made the change: a refusal as invalid
	// reopens it, with the server's problems under their fields.
	edit *limitForm
}

// fetch runs load with a deadline and wraps the answer in a message.
func fetch[T any](parent context.Context, timeout time.Duration, load func(ctx context.Context) (T, error), wrap func(T, error) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		v, err := load(ctx)
		return wrap(v, err)
	}
}

// loadCmd is the command that loads res, tagged with gen and round.
func (m Model) loadCmd(res resource, r reply) tea.Cmd {
	api, ctx, timeout := m.api, m.ctx, m.timeout
	switch res {
	case resDefinitions:
		return fetch(ctx, timeout, func(ctx context.Context) ([]ratelimit.Definition, error) {
			return api.ListAllDefinitions(ctx, client.DefinitionFilter{Limit: bigPage})
		}, func(v []ratelimit.Definition, err error) tea.Msg {
			r.err = err
			return definitionsMsg{reply: r, defs: v}
		})
	case resMemberships:
		build := m.members.indexMemberships()
		return fetch(ctx, timeout, func(ctx context.Context) ([]ratelimit.Membership, error) {
			return api.ListAllMemberships(ctx, client.MembershipFilter{Limit: bigPage})
		}, func(v []ratelimit.Membership, err error) tea.Msg {
			r.err = err
			msg := membershipsMsg{reply: r, memberships: v}
			if err == nil {
				rows := build(v)
				msg.rows = &rows
			}
			return msg
		})
	case resQuarantine:
		return fetch(ctx, timeout, api.ListQuarantine, func(v client.QuarantineList, err error) tea.Msg {
			r.err = err
			return quarantineMsg{reply: r, list: v}
		})
	case resAdmins:
		return fetch(ctx, timeout, api.ListAdmins, func(v []ratelimit.Admin, err error) tea.Msg {
			r.err = err
			return adminsMsg{reply: r, admins: v}
		})
	case resAudit:
		after := int64(0)
		if m.audit.list.Loaded() {
			after = m.audit.Newest()
		}
		return fetch(ctx, timeout, func(ctx context.Context) (client.AuditPage, error) {
			return api.ListAudit(ctx, client.AuditFilter{After: after, Limit: auditPage})
		}, func(v client.AuditPage, err error) tea.Msg {
			r.err = err
			return auditMsg{reply: r, after: after, entries: v.Entries}
		})
	case resRole:
		return fetch(ctx, timeout, api.ListTokens, func(_ []ratelimit.Token, err error) tea.Msg {
			r.err = err
			return roleMsg{reply: r}
		})
	case resEnforcement:
		return fetch(ctx, timeout, api.GetEnforcement, func(v ratelimit.Enforcement, err error) tea.Msg {
			r.err = err
			return enforcementMsg{reply: r, enforcement: v}
		})
	case resEvents:
		return eventsCmd(ctx, timeout, api, m.incidents.since(), r)
	case resDetail:
		d, ok := m.limits.Selected()
		if !ok {
			return nil
		}
		return detailCmd(ctx, timeout, api, d, r)
	}
	return nil
}

// detailCmd loads what the Limits pane shows besides the definition: the
// memberships of its group and its live counters.
func detailCmd(parent context.Context, timeout time.Duration, api API, d ratelimit.Definition, r reply) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		msg := detailMsg{reply: r, id: definitionID(d)}
		if hasGroupMemberships(d) {
			// One page: the pane shows a sample of a big group, not all.
			page, err := api.ListMemberships(ctx, client.MembershipFilter{Group: d.Name, Limit: detailMemberships})
			msg.memberships, msg.moreMembers, msg.membersErr = page.Memberships, page.NextCursor != "", err
		}
		if d.Axis != ratelimit.AxisQuarantine {
			var list client.CounterList
			list, msg.countersErr = api.ListCounters(ctx, client.CounterSelector{Definition: definitionID(d)}, 0)
			msg.counters, msg.countersTruncated = list.Counters, list.Truncated
			msg.countersOK = msg.countersErr == nil
		}
		return msg
	}
}

// runAction sends a confirmed change.
func (m Model) runAction(act action) tea.Cmd {
	api, parent, timeout := m.api, m.ctx, m.timeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(parent, timeout)
		defer cancel()
		res, err := act.run(ctx, api)
		return mutationMsg{act: act, result: res, err: err}
	}
}

// tick schedules the next tickMsg.
func tick(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// toggleAction enables or disables a definition.
func toggleAction(d ratelimit.Definition) action {
	id := definitionID(d)
	verb := "disable"
	if !d.Enabled {
		verb = "enable"
	}
	details := []string{"The gateways stop enforcing it at once."}
	if !d.Enabled {
		details = []string{"The gateways start enforcing it at once."}
	}
	return action{
		question: capitalize(verb) + " " + id + "?",
		details:  details,
		verb:     verb + " " + id,
		refresh:  []resource{resDefinitions, resDetail, resQuarantine, resAudit},
		run: func(ctx context.Context, api API) (string, error) {
			got, _, err := api.SetDefinitionEnabled(ctx, id, !d.Enabled, client.WriteOptions{})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%sd %s (now enabled=%s, version %d)", verb, id, yesNo(got.Enabled), got.Version), nil
		},
	}
}

// editAction changes a definition to what the limit form holds; changed
// is false when that is what is stored. The write names the version the
// form was opened on, so a change made meanwhile is refused, not undone.
func editAction(f limitForm) (act action, changed bool) {
	old, d := f.def, f.Definition()
	id := definitionID(old)
	shownOld := old
	shownOld.Algorithm = old.AlgorithmOrDefault()
	changes := cmdutil.Changes(shownOld, d)
	if len(changes) == 0 {
		return action{}, false
	}
	details := make([]string, 0, len(changes)+1)
	for _, c := range changes {
		details = append(details, cmdutil.FormatChanges([]cmdutil.FieldChange{c}))
	}
	details = append(details, "The gateways count with it at once.")
	return action{
		question: "Change " + id + "?",
		details:  details,
		verb:     "change " + id,
		refresh:  []resource{resDefinitions, resDetail, resAudit},
		edit:     &f,
		run: func(ctx context.Context, api API) (string, error) {
			res, err := api.PutDefinition(ctx, d, client.WriteOptions{IfVersion: old.Version})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("changed %s (%s, version %d)", id, limitSummary(res.Value), res.Value.Version), nil
		},
	}, true
}

// groupsAction sets a membership's groups to what the groups form holds;
// changed is false when they are what is stored. The write names the
// version the form was opened on, so a change made meanwhile is refused,
// not undone.
func groupsAction(f groupsForm) (act action, changed bool) {
	old, next := f.m, f.Membership()
	id := old.Key()
	if slices.Equal(old.Groups, next.Groups) {
		return action{}, false
	}
	var shown []string
	for _, g := range next.Groups {
		if !isQuarantineGroup(g) {
			shown = append(shown, g)
		}
	}
	effect := "The gateways apply the limits of " + strings.Join(shown, ", ") + " at once."
	if len(shown) == 0 {
		effect = "It is in no rate-limit group any more; its quarantine stays."
	}
	return action{
		question: "Set the groups of " + id + "?",
		details:  []string{"groups: " + strings.Join(old.Groups, ", ") + " → " + strings.Join(next.Groups, ", "), effect},
		verb:     "set the groups of " + id,
		refresh:  []resource{resMemberships, resDetail, resAudit},
		run: func(ctx context.Context, api API) (string, error) {
			res, err := api.PutMembership(ctx, next, client.WriteOptions{IfVersion: old.Version})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("set the groups of %s to %s (version %d)", id, strings.Join(res.Value.Groups, ", "), res.Value.Version), nil
		},
	}, true
}

// limitSummary is a definition's limits and algorithm in a few words.
func limitSummary(d ratelimit.Definition) string {
	s := cmdutil.LimitText(d) + " " + d.AlgorithmOrDefault()
	if d.AlgorithmOrDefault() == ratelimit.AlgorithmTokenBucket {
		s += " burst " + cmdutil.BurstText(d)
	}
	return s
}

// sentinelAction switches one half of quarantine on or off.
func sentinelAction(scope string, enabled bool) action {
	id := ratelimit.SentinelCallers
	if scope == "targets" {
		id = ratelimit.SentinelTargets
	}
	to := onOff(!enabled)
	var details []string
	if enabled {
		details = []string{"Quarantined " + scope + " are let through again until it is switched back on."}
	} else {
		details = []string{"Every quarantined " + scope[:len(scope)-1] + " is blocked again."}
	}
	return action{
		question: "Switch " + scope + " quarantine " + to + "?",
		details:  append(details, "Sentinel: "+id),
		verb:     "switch " + scope + " quarantine " + to,
		refresh:  []resource{resQuarantine, resDefinitions, resAudit},
		run: func(ctx context.Context, api API) (string, error) {
			got, _, err := api.SetDefinitionEnabled(ctx, id, !enabled, client.WriteOptions{})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("%s quarantine is %s", scope, onOff(got.Enabled)), nil
		},
	}
}

// enforcementAction flips the master switch for every replica.
func enforcementAction(enabled bool) action {
	to := !enabled
	act := action{
		question: "Turn enforcement OFF for every gateway?",
		details: []string{"Every call is allowed and nothing is counted, quarantine included,",
			"on every replica within a second, until it is switched back on (E)."},
		verb:    "turn enforcement off",
		refresh: []resource{resEnforcement, resAudit},
	}
	if to {
		act.question = "Turn enforcement back on for every gateway?"
		act.details = []string{"Limits and quarantine apply again on every replica within a second."}
		act.verb = "turn enforcement on"
	}
	act.run = func(ctx context.Context, api API) (string, error) {
		got, _, err := api.SetEnforcement(ctx, to, "switched from the dashboard", client.WriteOptions{})
		if err != nil {
			return "", err
		}
		if !got.Enabled {
			return "enforcement is OFF: every call is allowed, nothing is counted", nil
		}
		return "enforcement is on", nil
	}
	return act
}

// quarantineAction quarantines a subject.
func quarantineAction(q quarantineRequest) action {
	id := ratelimit.MembershipID(q.SubjectType, q.Subject)
	details := []string{"Every data-plane call " + scopeWord(q.SubjectType) + " " + id + " is denied."}
	if q.Reason != "" {
		details = append(details, "Reason: "+q.Reason)
	}
	if q.For > 0 {
		details = append(details, "Lifted after "+shortDuration(q.For)+".")
	} else {
		details = append(details, "Until removed.")
	}
	return action{
		question: "Quarantine " + id + "?",
		details:  details,
		verb:     "quarantine " + id,
		refresh:  []resource{resQuarantine, resMemberships, resAudit},
		run: func(ctx context.Context, api API) (string, error) {
			res, err := api.Quarantine(ctx, q.SubjectType, q.Subject,
				client.QuarantineRequest{Reason: q.Reason, ExpiresInSeconds: int(q.For / time.Second)}, client.WriteOptions{})
			switch {
			case err != nil:
				return "", err
			case res.Created:
				return "quarantined " + id, nil
			}
			return "updated the quarantine of " + id, nil
		},
	}
}

func scopeWord(subjectType string) string {
	if subjectType == ratelimit.SubjectServer || subjectType == ratelimit.SubjectAgent {
		return "to"
	}
	return "from"
}

// releaseAction lifts a subject's quarantine.
func releaseAction(r quarantineRow) action {
	id := ratelimit.MembershipID(r.e.SubjectType, r.e.Subject)
	details := []string{"Its calls are let through again."}
	if r.e.Reason != "" {
		details = append(details, "It was quarantined for: "+r.e.Reason)
	}
	return action{
		question: "Release " + id + " from quarantine?",
		details:  details,
		verb:     "release " + id,
		refresh:  []resource{resQuarantine, resMemberships, resAudit},
		run: func(ctx context.Context, api API) (string, error) {
			removed, _, err := api.Unquarantine(ctx, r.e.SubjectType, r.e.Subject, client.WriteOptions{})
			switch {
			case err != nil:
				return "", err
			case !removed:
				return id + " was not quarantined (nothing changed)", nil
			}
			return "released " + id + " from quarantine", nil
		},
	}
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// isRoleRefusal tells a token whose role may not do something (403
// "forbidden") from the server refusing one change (403, e.g. quarantining
// an administrator).
func isRoleRefusal(err error) bool { return errors.Is(err, client.ErrRoleForbidden) }

// isAuthFailure reports errors that no retry can cure and that every
// retry makes worse: the token is refused (401), or its role may not read
// at all (403 "forbidden" on a load). The dashboard stops on them.
func isAuthFailure(err error) bool {
	return errors.Is(err, client.ErrUnauthorized) || isRoleRefusal(err)
}

// isOutage reports errors that mean the server cannot be used right now:
// it is unreachable, unavailable or throttling us. These turn the
// connection state to lost and back the refresh off.
func isOutage(err error) bool {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		return !errors.Is(err, context.Canceled)
	}
	return errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrTooManyRequests)
}

// errorText says what went wrong in one line: the server's own message,
// after a word for the kind of failure.
func errorText(err error) string {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		if errors.Is(err, context.DeadlineExceeded) {
			return "timed out: " + err.Error()
		}
		return "cannot reach the server: " + err.Error()
	}
	msg := apiErr.Error()
	switch {
	case isRoleRefusal(err):
		return "forbidden: " + msg
	case apiErr.StatusCode == http.StatusForbidden:
		return "refused: " + msg
	case apiErr.StatusCode == http.StatusConflict:
		return "conflict: " + msg
	case apiErr.StatusCode == http.StatusPreconditionFailed:
		return "changed meanwhile: " + msg
	case apiErr.StatusCode == http.StatusUnauthorized:
		return "unauthorized: " + msg
	case apiErr.StatusCode == http.StatusNotFound:
		return "not found: " + msg
	case apiErr.StatusCode == http.StatusTooManyRequests:
		return "throttled: " + msg
	case apiErr.StatusCode >= 500:
		return "server unavailable: " + msg
	case apiErr.StatusCode >= 400:
		return "invalid: " + msg
	}
	return msg
}

// shortReason names a failure in a few words, for the banner: "connection
// refused", "503 service unavailable", "timed out".
func shortReason(err error) string {
	var apiErr *client.APIError
	switch {
	case errors.As(err, &apiErr):
		return strconv.Itoa(apiErr.StatusCode) + " " + strings.ToLower(http.StatusText(apiErr.StatusCode))
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
