package dash

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// clock is the fixed time every test renders at.
var clock = time.Date(2026, 3, 14, 15, 4, 5, 0, time.UTC)

func fixedNow() time.Time { return clock }

func ptr[T any](v T) *T { return &v }

func at(d time.Duration) *time.Time { return ptr(clock.Add(d)) }

// fixtureDefinitions is a small, varied set of definitions.
func fixtureDefinitions() []ratelimit.Definition {
	defs := []ratelimit.Definition{
		{Axis: "caller", EntityType: "group", Name: "developers", WindowSeconds: 60, UserMaxRequests: ptr(120), AgentMaxRequests: ptr(60), Enabled: true, Mode: "enforce", Version: 3, UpdatedAt: at(-2 * time.Hour), UpdatedBy: "alice", Description: "the default for engineers"},
		{Axis: "caller", EntityType: "group", Name: "partners", WindowSeconds: 3600, UserMaxRequests: ptr(1000), Enabled: true, Mode: "shadow", Version: 1},
		{Axis: "caller", EntityType: "group", Name: "batch-jobs", WindowSeconds: 60, AgentMaxRequests: ptr(30), Enabled: false, Mode: "enforce", Version: 7},
		{Axis: "target", EntityType: "mcp_server", Name: "github-mcp", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true, Mode: "enforce", Version: 2},
		{Axis: "target", EntityType: "server_group", Name: "search-fleet", WindowSeconds: 60, MaxRequests: ptr(2000), Members: []string{"search-eu", "search-us"}, Enabled: true, Mode: "enforce", Version: 4},
		{Axis: "caller_target", EntityType: "group", Name: "developers", WindowSeconds: 86400, UserMaxRequests: ptr(20000), Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "quarantine", EntityType: "group", Name: ratelimit.GroupQuarantineCallers, WindowSeconds: 1, Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "quarantine", EntityType: "group", Name: ratelimit.GroupQuarantineTargets, WindowSeconds: 1, Enabled: false, Mode: "enforce", Version: 2},
	}
	for i := range defs {
		defs[i].ID = defs[i].Key()
	}
	return defs
}

func fixtureMemberships() []ratelimit.Membership {
	return []ratelimit.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"developers"}, UpdatedAt: at(-48 * time.Hour)},
		{SubjectType: "user", Subject: "bob", Groups: []string{"developers", "partners"}, UpdatedAt: at(-time.Hour)},
		{SubjectType: "client", Subject: "nightly-etl", Groups: []string{"batch-jobs"}, UpdatedAt: at(-10 * time.Minute)},
		{SubjectType: "client", Subject: "leaked-bot", Groups: []string{"partners", ratelimit.GroupQuarantineCallers}, UpdatedAt: at(-5 * time.Minute),
			QuarantineReason: "key leaked in a public repo", QuarantinedAt: at(-5 * time.Minute)},
		{SubjectType: "server", Subject: "search-eu", Groups: []string{"search-fleet"}, UpdatedAt: at(-72 * time.Hour)},
	}
}

func fixtureQuarantine() client.QuarantineList {
	return client.QuarantineList{
		Callers: []client.QuarantineEntry{
			{ID: "client:leaked-bot", SubjectType: "client", Subject: "leaked-bot", Reason: "key leaked in a public repo", QuarantinedAt: at(-5 * time.Minute), ExpiresAt: at(115 * time.Minute)},
			{ID: "user:mallory", SubjectType: "user", Subject: "mallory", Reason: "scraping", QuarantinedAt: at(-26 * time.Hour)},
			{ID: "user:old", SubjectType: "user", Subject: "old", Reason: "test", QuarantinedAt: at(-72 * time.Hour), ExpiresAt: at(-time.Hour), Expired: true},
		},
		Targets: []client.QuarantineEntry{
			{ID: "server:flaky-mcp", SubjectType: "server", Subject: "flaky-mcp", Reason: "returns 500s", QuarantinedAt: at(-30 * time.Second)},
		},
		CallersEnabled: true,
		TargetsEnabled: false,
	}
}

func fixtureAdmins() []ratelimit.Admin {
	return []ratelimit.Admin{
		{SubjectType: "user", Subject: "root-oncall", Note: "incident commander", CreatedAt: at(-30 * 24 * time.Hour), CreatedBy: "bootstrap"},
		{SubjectType: "client", Subject: "gateway-health", Note: "health checks must never be limited", CreatedAt: at(-7 * 24 * time.Hour), CreatedBy: "alice"},
	}
}

func fixtureAudit() []ratelimit.AuditEntry {
	def := func(enabled bool, limit int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"id":"caller:group:developers:60","axis":"caller","entity_type":"group","name":"developers","window_seconds":60,"user_max_requests":%d,"enabled":%t,"version":3}`, limit, enabled))
	}
	return []ratelimit.AuditEntry{
		{ID: 42, Time: clock.Add(-time.Minute), Actor: "token:oncall", Action: "update", ResourceType: "definition", ResourceID: "caller:group:developers:60", Before: def(true, 100), After: def(true, 120), RequestID: "req-0042"},
		{ID: 41, Time: clock.Add(-5 * time.Minute), Actor: "token:oncall", Action: "create", ResourceType: "membership", ResourceID: "client:leaked-bot",
			After: json.RawMessage(`{"subject_type":"client","subject":"leaked-bot","groups":["quarantine-callers"],"quarantine_reason":"key leaked in a public repo"}`)},
		{ID: 40, Time: clock.Add(-3 * time.Hour), Actor: "token:ci", Action: "delete", ResourceType: "admin", ResourceID: "user:former-employee",
			Before: json.RawMessage(`{"subject_type":"user","subject":"former-employee","note":"left"}`)},
	}
}

// fakeAPI stands in for the server when a test runs a command. Each list
// answers with its field; each call is recorded.
type fakeAPI struct {
	mu    sync.Mutex
	calls []string

	defs        []ratelimit.Definition
	memberships []ratelimit.Membership
	quarantine  client.QuarantineList
	admins      []ratelimit.Admin
	audit       []ratelimit.AuditEntry
	counters    []client.Counter
	events      []ratelimit.Event

	listErr  error // returned by every list
	writeErr error // returned by every change
	tokenErr error // returned by ListTokens
}

func (f *fakeAPI) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeAPI) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeAPI) ListAllDefinitions(ctx context.Context, fl client.DefinitionFilter) ([]ratelimit.Definition, error) {
	f.record("ListAllDefinitions")
	return f.defs, f.listErr
}

func (f *fakeAPI) SetDefinitionEnabled(ctx context.Context, id string, enabled bool, o client.WriteOptions) (ratelimit.Definition, *client.DryRunReport, error) {
	f.record("SetDefinitionEnabled %s %t", id, enabled)
	if f.writeErr != nil {
		return ratelimit.Definition{}, nil, f.writeErr
	}
	return ratelimit.Definition{ID: id, Enabled: enabled, Version: 9}, nil, nil
}

func (f *fakeAPI) PutDefinition(ctx context.Context, d ratelimit.Definition, o client.WriteOptions) (client.PutResult[ratelimit.Definition], error) {
	f.record("PutDefinition %s %s %s if-version=%d", d.Key(), d.AlgorithmOrDefault(), limitsOf(d), o.IfVersion)
	if f.writeErr != nil {
		return client.PutResult[ratelimit.Definition]{}, f.writeErr
	}
	d.ID, d.Version = d.Key(), o.IfVersion+1
	return client.PutResult[ratelimit.Definition]{Value: d}, nil
}

func (f *fakeAPI) PutMembership(ctx context.Context, m ratelimit.Membership, o client.WriteOptions) (client.PutResult[ratelimit.Membership], error) {
	f.record("PutMembership %s groups=%s if-version=%d", m.Key(), strings.Join(m.Groups, ","), o.IfVersion)
	if f.writeErr != nil {
		return client.PutResult[ratelimit.Membership]{}, f.writeErr
	}
	m.ID, m.Version = m.Key(), o.IfVersion+1
	return client.PutResult[ratelimit.Membership]{Value: m}, nil
}

// limitsOf spells a definition's limits and bursts for a recorded call.
func limitsOf(d ratelimit.Definition) string {
	var parts []string
	for _, l := range []struct {
		name string
		v    *int
	}{{"max", d.MaxRequests}, {"burst", d.Burst}, {"user", d.UserMaxRequests}, {"user_burst", d.UserBurst},
		{"agent", d.AgentMaxRequests}, {"agent_burst", d.AgentBurst}} {
		if l.v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", l.name, *l.v))
		}
	}
	return strings.Join(parts, ",")
}

func (f *fakeAPI) ListAllMemberships(ctx context.Context, fl client.MembershipFilter) ([]ratelimit.Membership, error) {
	f.record("ListAllMemberships group=%s", fl.Group)
	if fl.Group == "" {
		return f.memberships, f.listErr
	}
	var out []ratelimit.Membership
	for _, m := range f.memberships {
		if m.HasGroup(fl.Group) {
			out = append(out, m)
		}
	}
	return out, f.listErr
}

func (f *fakeAPI) ListMemberships(ctx context.Context, fl client.MembershipFilter) (client.MembershipPage, error) {
	f.record("ListMemberships group=%s limit=%d", fl.Group, fl.Limit)
	var out []ratelimit.Membership
	for _, m := range f.memberships {
		if fl.Group == "" || m.HasGroup(fl.Group) {
			out = append(out, m)
		}
	}
	return client.MembershipPage{Memberships: out}, f.listErr
}

func (f *fakeAPI) ListQuarantine(ctx context.Context) (client.QuarantineList, error) {
	f.record("ListQuarantine")
	return f.quarantine, f.listErr
}

func (f *fakeAPI) Quarantine(ctx context.Context, subjectType, subject string, q client.QuarantineRequest, o client.WriteOptions) (client.QuarantineResult, error) {
	f.record("Quarantine %s:%s reason=%q for=%d", subjectType, subject, q.Reason, q.ExpiresInSeconds)
	if f.writeErr != nil {
		return client.QuarantineResult{}, f.writeErr
	}
	return client.QuarantineResult{Created: true}, nil
}

func (f *fakeAPI) Unquarantine(ctx context.Context, subjectType, subject string, o client.WriteOptions) (bool, *client.DryRunReport, error) {
	f.record("Unquarantine %s:%s", subjectType, subject)
	return f.writeErr == nil, nil, f.writeErr
}

func (f *fakeAPI) ListAdmins(ctx context.Context) ([]ratelimit.Admin, error) {
	f.record("ListAdmins")
	return f.admins, f.listErr
}

func (f *fakeAPI) ListAudit(ctx context.Context, fl client.AuditFilter) (client.AuditPage, error) {
	f.record("ListAudit after=%d", fl.After)
	return client.AuditPage{Entries: f.audit}, f.listErr
}

func (f *fakeAPI) ListTokens(ctx context.Context) ([]ratelimit.Token, error) {
	f.record("ListTokens")
	return nil, f.tokenErr
}

// GetEnforcement answers "on", unrecorded: every refresh round reads it.
func (f *fakeAPI) GetEnforcement(ctx context.Context) (ratelimit.Enforcement, error) {
	return ratelimit.Enforcement{Enabled: true}, f.listErr
}

func (f *fakeAPI) SetEnforcement(ctx context.Context, enabled bool, reason string, o client.WriteOptions) (ratelimit.Enforcement, *client.DryRunReport, error) {
	f.record("SetEnforcement %v reason=%q", enabled, reason)
	return ratelimit.Enforcement{Enabled: enabled, Reason: reason, Version: 1}, nil, f.writeErr
}

func (f *fakeAPI) ListCounters(ctx context.Context, sel client.CounterSelector, limit int) (client.CounterList, error) {
	f.record("ListCounters %s", sel)
	return client.CounterList{Counters: f.counters}, f.listErr
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{
		defs: fixtureDefinitions(), memberships: fixtureMemberships(), quarantine: fixtureQuarantine(),
		admins: fixtureAdmins(), audit: fixtureAudit(),
		counters: []client.Counter{{Key: "rl:target:mcp_server:github-mcp:60", WindowSeconds: 60, Count: 37, ExpiresAt: clock.Add(40 * time.Second)}},
	}
}

// newModel is a model of w×h cells over api, without colour, at the fixed
// clock, before any data.
func newModel(t testing.TB, api API, w, h int) Model {
	t.Helper()
	m := New(context.Background(), Config{API: api, Server: "http://rlapi.test:8080", Context: "prod", Now: fixedNow, Styles: NewStyles(io.Discard, false)})
	return update(t, m, tea.WindowSizeMsg{Width: w, Height: h})
}

// update feeds one message and returns the new root model.
func update(t testing.TB, m Model, msg tea.Msg) Model {
	t.Helper()
	next, _ := m.Update(msg)
	return next.(Model)
}

// ok builds the reply that answers the latest request for res.
func ok(m Model, res resource) reply { return reply{gen: m.gens[res], round: m.round} }

// loaded is a model of w×h with every fixture loaded and the role known.
func loaded(t testing.TB, w, h int) Model {
	t.Helper()
	m := newModel(t, newFakeAPI(), w, h)
	m = update(t, m, definitionsMsg{reply: ok(m, resDefinitions), defs: fixtureDefinitions()})
	m = update(t, m, membershipsMsg{reply: ok(m, resMemberships), memberships: fixtureMemberships()})
	m = update(t, m, quarantineMsg{reply: ok(m, resQuarantine), list: fixtureQuarantine()})
	m = update(t, m, adminsMsg{reply: ok(m, resAdmins), admins: fixtureAdmins()})
	m = update(t, m, auditMsg{reply: ok(m, resAudit), entries: fixtureAudit()})
	m = update(t, m, roleMsg{reply: ok(m, resRole)})
	return m
}

// keys turns a string into key messages: runes one by one, and names in
// angle brackets for the special keys: "<enter>", "<esc>", "<tab>".
func keys(s string) []tea.KeyMsg {
	var out []tea.KeyMsg
	for len(s) > 0 {
		if s[0] == '<' {
			end := 1
			for end < len(s) && s[end] != '>' {
				end++
			}
			name := s[1:end]
			s = s[min(end+1, len(s)):]
			out = append(out, specialKey(name))
			continue
		}
		r := []rune(s)[0]
		s = s[len(string(r)):]
		out = append(out, tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	return out
}

func specialKey(name string) tea.KeyMsg {
	types := map[string]tea.KeyType{
		"enter": tea.KeyEnter, "esc": tea.KeyEsc, "tab": tea.KeyTab, "shift+tab": tea.KeyShiftTab,
		"up": tea.KeyUp, "down": tea.KeyDown, "left": tea.KeyLeft, "right": tea.KeyRight,
		"pgdown": tea.KeyPgDown, "pgup": tea.KeyPgUp, "backspace": tea.KeyBackspace, "ctrl+c": tea.KeyCtrlC,
		"space": tea.KeySpace, "home": tea.KeyHome, "end": tea.KeyEnd, "ctrl+u": tea.KeyCtrlU,
	}
	typ, found := types[name]
	if !found {
		panic("unknown key " + name)
	}
	return tea.KeyMsg{Type: typ}
}

// press feeds keys and returns the model and the last command.
func press(t testing.TB, m Model, s string) (Model, tea.Cmd) {
	t.Helper()
	var cmd tea.Cmd
	for _, k := range keys(s) {
		var next tea.Model
		next, cmd = m.Update(k)
		m = next.(Model)
	}
	return m, cmd
}

func (f *fakeAPI) ListEvents(ctx context.Context, fl client.EventFilter) (client.EventPage, error) {
	f.record("ListEvents since=%s limit=%d", fl.Since.Format(time.RFC3339), fl.Limit)
	return client.EventPage{Events: f.events}, f.listErr
}
