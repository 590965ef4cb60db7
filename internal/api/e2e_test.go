package api_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func ptr[T any](v T) *T { return &v }

// newClient starts rlapi over a fresh database and returns an admin client.
func newClient(t *testing.T) (*client.Client, *apitest.Env) {
	t.Helper()
	env := apitest.Start(t, api.Config{})
	return clientFor(t, env, env.AdminToken), env
}

func clientFor(t *testing.T, env *apitest.Env, token string) *client.Client {
	t.Helper()
	c, err := client.New(env.URL, client.Options{Token: token, Retries: -1, HTTPClient: contractHTTPClient(t)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func group(name string, window, user, agent int) ratelimit.Definition {
	d := ratelimit.Definition{Axis: "caller", EntityType: "group", Name: name, WindowSeconds: window, Enabled: true}
	if user > 0 {
		d.UserMaxRequests = ptr(user)
	}
	if agent > 0 {
		d.AgentMaxRequests = ptr(agent)
	}
	return d
}

func wantStatus(t *testing.T, err error, sentinel error, contains string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("err = %v, want %v", err, sentinel)
	}
	if contains != "" && !strings.Contains(err.Error(), contains) {
		t.Errorf("error %q does not contain %q", err.Error(), contains)
	}
}

func auditCount(t *testing.T, env *apitest.Env) int {
	t.Helper()
	var n int
	if err := env.Store.Pool().QueryRow(context.Background(), `select count(*) from rl_audit_log`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDefinitionsEndToEnd(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()

	res, err := c.PutDefinition(ctx, group("developers", 60, 100, 50), client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Value.Version != 1 || res.Value.ID != "caller:group:developers:60" || res.Value.UpdatedBy != "test-admin" {
		t.Errorf("create = %+v created=%v", res.Value, res.Created)
	}

	d, err := c.GetDefinition(ctx, "caller:group:developers:60")
	if err != nil || *d.UserMaxRequests != 100 || !d.Enabled || d.Mode != "enforce" {
		t.Fatalf("get = %+v, %v", d, err)
	}

	d.UserMaxRequests = ptr(200)
	res, err = c.PutDefinition(ctx, d, client.WriteOptions{IfVersion: d.Version})
	if err != nil || res.Created || res.Value.Version != 2 {
		t.Fatalf("conditional update = %+v created=%v, %v", res.Value, res.Created, err)
	}
	// Stale If-Match: 412 and nothing changes.
	d.UserMaxRequests = ptr(300)
	_, err = c.PutDefinition(ctx, d, client.WriteOptions{IfVersion: 1})
	wantStatus(t, err, client.ErrPreconditionFailed, "stored version is 2")
	if got, _ := c.GetDefinition(ctx, d.ID); *got.UserMaxRequests != 200 {
		t.Errorf("after stale write: user max %d, want 200", *got.UserMaxRequests)
	}
	// The same content again: 200, same version, no audit row.
	before := auditCount(t, env)
	d.UserMaxRequests = ptr(200)
	res, err = c.PutDefinition(ctx, d, client.WriteOptions{})
	if err != nil || res.Created || res.Value.Version != 2 {
		t.Errorf("identical put = %+v, %v; want version 2", res.Value, err)
	}
	if auditCount(t, env) != before {
		t.Error("an identical put wrote an audit row")
	}

	// Disable and enable in place.
	got, _, err := c.SetDefinitionEnabled(ctx, d.ID, false, client.WriteOptions{})
	if err != nil || got.Enabled || got.Version != 3 {
		t.Fatalf("disable = %+v, %v", got, err)
	}
	if _, _, err := c.SetDefinitionEnabled(ctx, "caller:group:nope:60", true, client.WriteOptions{}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("enable unknown: %v, want not found", err)
	}

	// A server group and a daily volume cap; filters and paging.
	for _, def := range []ratelimit.Definition{
		group("developers", 86400, 5000, 5000),
		{Axis: "target", EntityType: "server_group", Name: "fragile", WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"airegistry-tools", "/aws-kb/"}, Enabled: true},
		{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true},
	} {
		if _, err := c.PutDefinition(ctx, def, client.WriteOptions{}); err != nil {
			t.Fatalf("put %s: %v", def.Key(), err)
		}
	}
	sg, err := c.GetDefinition(ctx, "target:server_group:fragile:60")
	if err != nil || !slices.Equal(sg.Members, []string{"airegistry-tools", "aws-kb"}) {
		t.Errorf("server group members = %v (%v), want normalized [airegistry-tools aws-kb]", sg.Members, err)
	}
	page, err := c.ListDefinitions(ctx, client.DefinitionFilter{Axis: "caller", Limit: 1})
	if err != nil || len(page.Definitions) != 1 || page.NextCursor == "" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	page2, err := c.ListDefinitions(ctx, client.DefinitionFilter{Axis: "caller", Limit: 1, Cursor: page.NextCursor})
	if err != nil || len(page2.Definitions) != 1 || page2.NextCursor != "" || page2.Definitions[0].ID == page.Definitions[0].ID {
		t.Fatalf("second page = %+v, %v", page2, err)
	}
	byMember, _ := c.ListAllDefinitions(ctx, client.DefinitionFilter{Group: "aws-kb"})
	if len(byMember) != 1 || byMember[0].ID != "target:server_group:fragile:60" {
		t.Errorf("group filter by member = %v", byMember)
	}
	disabled, _ := c.ListAllDefinitions(ctx, client.DefinitionFilter{Enabled: ptr(false)})
	if len(disabled) != 1 || disabled[0].ID != "caller:group:developers:60" {
		t.Errorf("enabled=false filter = %v", disabled)
	}
	all, _ := c.ListAllDefinitions(ctx, client.DefinitionFilter{})
	if len(all) != 6 { // 4 created + 2 sentinels
		t.Errorf("all definitions = %d, want 6", len(all))
	}

	// Delete, then it is gone; deleting again is 404.
	if _, err := c.DeleteDefinition(ctx, "target:mcp_server:mcpgw:60", client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetDefinition(ctx, "target:mcp_server:mcpgw:60")
	wantStatus(t, err, client.ErrNotFound, "not found")
	_, err = c.DeleteDefinition(ctx, "target:mcp_server:mcpgw:60", client.WriteOptions{})
	wantStatus(t, err, client.ErrNotFound, "")
}

func TestValidationMessagesFromTheReference(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	cases := []struct {
		name string
		def  ratelimit.Definition
		want string
	}{
		{"user floor", group("testers", 60, 3, 0), "user_max_requests 3 is below the user floor of 20/min for windows <= 60s"},
		{"agent floor", group("testers", 30, 0, 5), "agent_max_requests 5 is below the agent floor of 10/min for windows <= 60s"},
		{"reserved name", group("quarantine-callers", 60, 30, 0), `"quarantine-callers" is reserved for quarantine`},
		{"max on caller", ratelimit.Definition{Axis: "caller", EntityType: "group", Name: "g", WindowSeconds: 60, MaxRequests: ptr(5), UserMaxRequests: ptr(30)}, "max_requests: not allowed on the caller axis"},
		{"window", group("g", 86401, 30, 0), "window_seconds: must be between 1 and 86400"},
	}
	for _, tc := range cases {
		_, err := c.PutDefinition(ctx, tc.def, client.WriteOptions{})
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
			t.Errorf("%s: err = %v, want a 400", tc.name, err)
			continue
		}
		if !strings.Contains(apiErr.Detail, tc.want) {
			t.Errorf("%s: detail %q, want %q", tc.name, apiErr.Detail, tc.want)
		}
		if len(apiErr.Errors) == 0 {
			t.Errorf("%s: no field errors", tc.name)
		}
	}
	// Longer windows are exempt from floors.
	if _, err := c.PutDefinition(ctx, group("testers", 61, 3, 0), client.WriteOptions{}); err != nil {
		t.Errorf("61 s window below the floor: %v, want accepted", err)
	}
}

func TestSentinels(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	for _, id := range []string{ratelimit.SentinelCallers, ratelimit.SentinelTargets} {
		_, err := c.DeleteDefinition(ctx, id, client.WriteOptions{})
		wantStatus(t, err, client.ErrConflict, "cannot be deleted")
		d, _, err := c.SetDefinitionEnabled(ctx, id, false, client.WriteOptions{})
		if err != nil || d.Enabled {
			t.Errorf("disable %s = %+v, %v", id, d, err)
		}
	}
	q, err := c.ListQuarantine(ctx)
	if err != nil || q.CallersEnabled || q.TargetsEnabled {
		t.Errorf("quarantine switches after disabling = %+v, %v; want both off", q, err)
	}
}

// TestOddIDs exercises every route with ids holding '/', ':', '%', '+' and
// non-ASCII (whitespace is refused in names: validate.NameRule).
func TestOddIDs(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	defs := []ratelimit.Definition{
		{Axis: "target", EntityType: "a2a_agent", Name: "/peer/x+y/agent%20é", WindowSeconds: 60, MaxRequests: ptr(5), Enabled: true},
		{Axis: "target", EntityType: "mcp_server", Name: "fed/peer:1/srv", WindowSeconds: 60, MaxRequests: ptr(5), Enabled: true},
		{Axis: "target", EntityType: "mcp_tool", Name: "fed/srv:search+docs", WindowSeconds: 60, MaxRequests: ptr(5), Enabled: true},
		{Axis: "target", EntityType: "a2a_skill", Name: "/booking-agent:réserver", WindowSeconds: 60, MaxRequests: ptr(5), Enabled: true},
	}
	for _, d := range defs {
		res, err := c.PutDefinition(ctx, d, client.WriteOptions{})
		if err != nil {
			t.Fatalf("put %q: %v", d.Key(), err)
		}
		id := res.Value.ID
		if got, err := c.GetDefinition(ctx, id); err != nil || got.Name != d.Name {
			t.Errorf("get %q = %q, %v", id, got.Name, err)
		}
		if _, _, err := c.SetDefinitionEnabled(ctx, id, false, client.WriteOptions{}); err != nil {
			t.Errorf("disable %q: %v", id, err)
		}
		if _, err := c.DeleteDefinition(ctx, id, client.WriteOptions{}); err != nil {
			t.Errorf("delete %q: %v", id, err)
		}
	}
	subjects := []string{"a/b:c%d+é", "alice@example.com", "x:y/z"}
	for _, s := range subjects {
		m := ratelimit.Membership{SubjectType: "user", Subject: s, Groups: []string{"g"}}
		if _, err := c.PutMembership(ctx, m, client.WriteOptions{}); err != nil {
			t.Fatalf("put membership %q: %v", s, err)
		}
		if got, err := c.GetMembership(ctx, m.Key()); err != nil || got.Subject != s {
			t.Errorf("get membership %q = %q, %v", m.Key(), got.Subject, err)
		}
		if _, err := c.Quarantine(ctx, "user", s, client.QuarantineRequest{Reason: "odd"}, client.WriteOptions{}); err != nil {
			t.Errorf("quarantine %q: %v", s, err)
		}
		if removed, _, err := c.Unquarantine(ctx, "user", s, client.WriteOptions{}); err != nil || !removed {
			t.Errorf("unquarantine %q = %v, %v", s, removed, err)
		}
		if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "client", Subject: s}, client.WriteOptions{}); err != nil {
			t.Errorf("admin %q: %v", s, err)
		}
		if _, err := c.DeleteAdmin(ctx, "client", s, client.WriteOptions{}); err != nil {
			t.Errorf("delete admin %q: %v", s, err)
		}
		if _, err := c.DeleteMembership(ctx, m.Key(), client.WriteOptions{}); err != nil {
			t.Errorf("delete membership %q: %v", s, err)
		}
	}
}

func TestMembershipsEndToEnd(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	m := ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"devs", "ops", "devs"}}
	res, err := c.PutMembership(ctx, m, client.WriteOptions{})
	if err != nil || !res.Created || !slices.Equal(res.Value.Groups, []string{"devs", "ops"}) {
		t.Fatalf("put = %+v created=%v, %v", res.Value, res.Created, err)
	}
	_, err = c.PutMembership(ctx, ratelimit.Membership{SubjectType: "server", Subject: "mcpgw", Groups: []string{"devs"}}, client.WriteOptions{})
	wantStatus(t, err, client.ErrBadRequest, "quarantine-targets")
	_, err = c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "bob", Groups: []string{"quarantine-targets"}}, client.WriteOptions{})
	wantStatus(t, err, client.ErrBadRequest, "quarantine-targets")

	m.Groups = []string{"devs"}
	res, err = c.PutMembership(ctx, m, client.WriteOptions{IfVersion: 1})
	if err != nil || res.Value.Version != 2 {
		t.Fatalf("conditional update = %+v, %v", res.Value, err)
	}
	_, err = c.PutMembership(ctx, m, client.WriteOptions{IfVersion: 1})
	wantStatus(t, err, client.ErrPreconditionFailed, "")

	for _, s := range []string{"bob", "carol"} {
		if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "client", Subject: s, Groups: []string{"agents"}}, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	agents, err := c.ListAllMemberships(ctx, client.MembershipFilter{Group: "agents"})
	if err != nil || len(agents) != 2 {
		t.Errorf("members of agents = %v, %v", agents, err)
	}
	users, _ := c.ListAllMemberships(ctx, client.MembershipFilter{SubjectType: "user"})
	if len(users) != 1 || users[0].ID != "user:alice" {
		t.Errorf("user memberships = %v", users)
	}
	page, err := c.ListMemberships(ctx, client.MembershipFilter{Limit: 2})
	if err != nil || len(page.Memberships) != 2 || page.NextCursor == "" {
		t.Errorf("first page = %+v, %v", page, err)
	}
	if _, err := c.DeleteMembership(ctx, "user:alice", client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetMembership(ctx, "user:alice")
	wantStatus(t, err, client.ErrNotFound, "")
}

func TestQuarantineEndToEnd(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()

	// A caller keeps its other groups while quarantined.
	if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "client", Subject: "agent-7", Groups: []string{"agents"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Quarantine(ctx, "client", "agent-7", client.QuarantineRequest{Reason: "credential leak"}, client.WriteOptions{})
	if err != nil || !res.Created || res.Entry.Reason != "credential leak" || res.Entry.QuarantinedAt == nil {
		t.Fatalf("quarantine = %+v, %v", res, err)
	}
	m, _ := c.GetMembership(ctx, "client:agent-7")
	if !slices.Equal(m.Groups, []string{"agents", "quarantine-callers"}) {
		t.Errorf("groups while quarantined = %v", m.Groups)
	}
	// Again: updated, not created; the start time stays.
	again, err := c.Quarantine(ctx, "client", "agent-7", client.QuarantineRequest{Reason: "still leaking"}, client.WriteOptions{})
	if err != nil || again.Created || !again.Entry.QuarantinedAt.Equal(*res.Entry.QuarantinedAt) {
		t.Errorf("re-quarantine = %+v, %v", again, err)
	}
	// A target, with an expiry already past: listed as expired.
	if _, err := c.Quarantine(ctx, "server", "/mcpgw/", client.QuarantineRequest{ExpiresInSeconds: 1}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.Pool().Exec(ctx, `update rl_memberships set quarantine_expires_at = now() - interval '1 second' where subject = 'mcpgw'`); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListQuarantine(ctx)
	if err != nil || len(list.Callers) != 1 || len(list.Targets) != 1 || !list.CallersEnabled {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if list.Targets[0].ID != "server:mcpgw" || !list.Targets[0].Expired {
		t.Errorf("target entry = %+v, want server:mcpgw expired", list.Targets[0])
	}
	if list.Callers[0].Expired {
		t.Errorf("caller without expiry listed as expired")
	}

	// Remove: the caller keeps "agents"; the target's membership is gone.
	removed, _, err := c.Unquarantine(ctx, "client", "agent-7", client.WriteOptions{})
	if err != nil || !removed {
		t.Fatalf("unquarantine = %v, %v", removed, err)
	}
	m, _ = c.GetMembership(ctx, "client:agent-7")
	if !slices.Equal(m.Groups, []string{"agents"}) || m.QuarantineReason != "" {
		t.Errorf("after removal = %+v, want only agents and no reason", m)
	}
	if removed, _, err := c.Unquarantine(ctx, "server", "mcpgw", client.WriteOptions{}); err != nil || !removed {
		t.Errorf("unquarantine target = %v, %v", removed, err)
	}
	if _, err := c.GetMembership(ctx, "server:mcpgw"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("target membership after removal: %v, want gone", err)
	}
	// Not quarantined: removed=false, no error.
	if removed, _, err := c.Unquarantine(ctx, "user", "nobody", client.WriteOptions{}); err != nil || removed {
		t.Errorf("unquarantine of a stranger = %v, %v; want false", removed, err)
	}
}

func TestAdministratorsCannotBeQuarantined(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	if res, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "root", Note: "break glass"}, client.WriteOptions{}); err != nil || !res.Created {
		t.Fatalf("grant = %+v, %v", res, err)
	}
	before := auditCount(t, env)
	_, err := c.Quarantine(ctx, "user", "root", client.QuarantineRequest{}, client.WriteOptions{})
	wantStatus(t, err, client.ErrForbidden, "Refusing to quarantine 'root': it has administrator privileges")
	_, err = c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "root", Groups: []string{"quarantine-callers"}}, client.WriteOptions{})
	wantStatus(t, err, client.ErrForbidden, "Refusing to quarantine 'root'")
	if _, err := c.GetMembership(ctx, "user:root"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("refused quarantine left a membership: %v", err)
	}
	if auditCount(t, env) != before {
		t.Error("refused quarantine wrote an audit row")
	}
	// A client of the same name is a different identity.
	if _, err := c.Quarantine(ctx, "client", "root", client.QuarantineRequest{}, client.WriteOptions{}); err != nil {
		t.Errorf("quarantine client:root (not an admin): %v", err)
	}
	// The other way: a quarantined caller cannot become an admin.
	_, err = c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "client", Subject: "root"}, client.WriteOptions{})
	wantStatus(t, err, client.ErrConflict, "is quarantined")

	// When the admin check cannot be made, nothing is written: 503.
	if _, err := env.Store.Pool().Exec(ctx, `alter table rl_admins rename to rl_admins_gone`); err != nil {
		t.Fatal(err)
	}
	_, err = c.Quarantine(ctx, "user", "mallory", client.QuarantineRequest{}, client.WriteOptions{})
	wantStatus(t, err, client.ErrUnavailable, "cannot verify whether 'mallory' is an administrator")
	if _, err := env.Store.Pool().Exec(ctx, `alter table rl_admins_gone rename to rl_admins`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetMembership(ctx, "user:mallory"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("failed admin check still quarantined mallory: %v", err)
	}
	// Body must match the URL.
	_, err = c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "root"}, client.WriteOptions{})
	if err != nil {
		t.Errorf("re-grant root: %v", err)
	}
	admins, _ := c.ListAdmins(ctx)
	if len(admins) != 1 || admins[0].Key() != "user:root" {
		t.Errorf("admins = %+v", admins)
	}
	if _, err := c.DeleteAdmin(ctx, "user", "root", client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteAdmin(ctx, "user", "root", client.WriteOptions{}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("delete admin twice: %v", err)
	}
}

func TestAdminBodyMustMatchURL(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	a := do(t, env.URL, call{method: "PUT", path: "/api/rate-limit-admins/user:alice", token: env.AdminToken,
		body: `{"subject_type":"user","subject":"bob"}`})
	if detail, _ := a.json(t)["detail"].(string); a.status != 400 || !strings.Contains(detail, `"user:alice"`) || !strings.Contains(detail, `"user:bob"`) {
		t.Errorf("mismatched admin body: %d %s", a.status, a.body)
	}
	a = do(t, env.URL, call{method: "PUT", path: "/api/rate-limit-admins/user:alice", token: env.AdminToken})
	if a.status != 201 {
		t.Errorf("admin PUT without a body: %d %s", a.status, a.body)
	}
}

// TestDryRunsChangeNothing runs every mutation as a dry run and checks the
// report, then that the state and the audit log are as before.
func TestDryRunsChangeNothing(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	dry := client.WriteOptions{DryRun: true}
	if _, err := c.PutDefinition(ctx, group("devs", 60, 100, 0), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"devs"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "root"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		defs, _ := c.ListAllDefinitions(ctx, client.DefinitionFilter{})
		ms, _ := c.ListAllMemberships(ctx, client.MembershipFilter{})
		admins, _ := c.ListAdmins(ctx)
		tokens, _ := c.ListTokens(ctx)
		var b strings.Builder
		for _, d := range defs {
			fmt.Fprintf(&b, "%s v%d %v|", d.ID, d.Version, d.Enabled)
		}
		for _, m := range ms {
			fmt.Fprintf(&b, "%s v%d %v|", m.ID, m.Version, m.Groups)
		}
		for _, a := range admins {
			fmt.Fprintf(&b, "%s|", a.Key())
		}
		for _, t := range tokens {
			fmt.Fprintf(&b, "%s %v|", t.Name, t.RevokedAt != nil)
		}
		return b.String()
	}
	state, audits := snapshot(), auditCount(t, env)

	upd := group("devs", 60, 200, 0)
	res, err := c.PutDefinition(ctx, upd, dry)
	if err != nil || res.DryRun == nil || res.DryRun.Action != "update" {
		t.Fatalf("dry update = %+v, %v", res.DryRun, err)
	}
	if len(res.DryRun.Changes) != 1 || res.DryRun.Changes[0].Field != "user_max_requests" {
		t.Errorf("dry update changes = %+v, want only user_max_requests", res.DryRun.Changes)
	}
	if res, err := c.PutDefinition(ctx, group("new", 60, 100, 0), dry); err != nil || res.DryRun.Action != "create" {
		t.Errorf("dry create = %+v, %v", res.DryRun, err)
	}
	if _, err := c.PutDefinition(ctx, group("new", 60, 3, 0), dry); !errors.Is(err, client.ErrBadRequest) {
		t.Errorf("dry run of an invalid definition: %v, want 400", err)
	}
	steps := []struct {
		name   string
		run    func() (*client.DryRunReport, error)
		action string
	}{
		{"disable", func() (*client.DryRunReport, error) {
			_, r, err := c.SetDefinitionEnabled(ctx, "caller:group:devs:60", false, dry)
			return r, err
		}, "disable"},
		{"delete definition", func() (*client.DryRunReport, error) { return c.DeleteDefinition(ctx, "caller:group:devs:60", dry) }, "delete"},
		{"membership", func() (*client.DryRunReport, error) {
			r, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"ops"}}, dry)
			return r.DryRun, err
		}, "update"},
		{"delete membership", func() (*client.DryRunReport, error) { return c.DeleteMembership(ctx, "user:alice", dry) }, "delete"},
		{"quarantine", func() (*client.DryRunReport, error) {
			r, err := c.Quarantine(ctx, "user", "alice", client.QuarantineRequest{Reason: "x"}, dry)
			return r.DryRun, err
		}, "quarantine"},
		{"admin", func() (*client.DryRunReport, error) {
			r, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "ops"}, dry)
			return r.DryRun, err
		}, "grant"},
		{"delete admin", func() (*client.DryRunReport, error) { return c.DeleteAdmin(ctx, "user", "root", dry) }, "revoke"},
	}
	for _, s := range steps {
		r, err := s.run()
		if err != nil || r == nil || !r.DryRun || r.Action != s.action {
			t.Errorf("%s: report %+v, %v; want action %s", s.name, r, err, s.action)
		}
	}
	// A dry run of an admin quarantine is refused like the real thing.
	if _, err := c.Quarantine(ctx, "user", "root", client.QuarantineRequest{}, dry); !errors.Is(err, client.ErrForbidden) {
		t.Errorf("dry quarantine of an admin: %v, want 403", err)
	}
	if got := snapshot(); got != state {
		t.Errorf("dry runs changed the state:\nbefore %s\nafter  %s", state, got)
	}
	if auditCount(t, env) != audits {
		t.Errorf("dry runs wrote audit rows: %d -> %d", audits, auditCount(t, env))
	}
}

func TestAuditRowPerMutation(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	ops := []struct {
		action, resource string
		do               func() error
	}{
		{"create", "definition", func() error { _, err := c.PutDefinition(ctx, group("g", 60, 30, 0), client.WriteOptions{}); return err }},
		{"update", "definition", func() error { _, err := c.PutDefinition(ctx, group("g", 60, 40, 0), client.WriteOptions{}); return err }},
		{"disable", "definition", func() error {
			_, _, err := c.SetDefinitionEnabled(ctx, "caller:group:g:60", false, client.WriteOptions{})
			return err
		}},
		{"create", "membership", func() error {
			_, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "u", Groups: []string{"g"}}, client.WriteOptions{})
			return err
		}},
		{"quarantine", "membership", func() error {
			_, err := c.Quarantine(ctx, "user", "u", client.QuarantineRequest{}, client.WriteOptions{})
			return err
		}},
		{"unquarantine", "membership", func() error { _, _, err := c.Unquarantine(ctx, "user", "u", client.WriteOptions{}); return err }},
		{"delete", "membership", func() error { _, err := c.DeleteMembership(ctx, "user:u", client.WriteOptions{}); return err }},
		{"grant", "admin", func() error {
			_, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "a"}, client.WriteOptions{})
			return err
		}},
		{"revoke", "admin", func() error { _, err := c.DeleteAdmin(ctx, "user", "a", client.WriteOptions{}); return err }},
		{"create", "token", func() error {
			_, err := c.CreateToken(ctx, client.CreateTokenRequest{Name: "ci", Role: "viewer"})
			return err
		}},
		{"revoke", "token", func() error { return c.RevokeToken(ctx, "ci") }},
		{"delete", "definition", func() error {
			_, err := c.DeleteDefinition(ctx, "caller:group:g:60", client.WriteOptions{})
			return err
		}},
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Fatalf("%s %s: %v", op.action, op.resource, err)
		}
	}
	page, err := c.ListAudit(ctx, client.AuditFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) != len(ops) {
		t.Fatalf("audit has %d rows, want one per mutation (%d)", len(page.Entries), len(ops))
	}
	for i, op := range ops {
		e := page.Entries[len(ops)-1-i] // newest first
		if e.Action != op.action || e.ResourceType != op.resource || e.Actor != "test-admin" || e.RequestID == "" {
			t.Errorf("audit row %d = %s %s by %s (request %q), want %s %s by test-admin", i, e.Action, e.ResourceType, e.Actor, e.RequestID, op.action, op.resource)
		}
	}
	first := page.Entries[len(ops)-1]
	if first.Before != nil || first.After == nil {
		t.Errorf("create row before/after = %s / %s, want null / the definition", first.Before, first.After)
	}
	byRes, _ := c.ListAudit(ctx, client.AuditFilter{Resource: "definition/caller:group:g:60"})
	if len(byRes.Entries) != 4 {
		t.Errorf("audit for the definition = %d rows, want 4", len(byRes.Entries))
	}
	since, _ := c.ListAudit(ctx, client.AuditFilter{Since: time.Now().Add(time.Hour)})
	if len(since.Entries) != 0 {
		t.Errorf("audit since the future = %d rows", len(since.Entries))
	}
}

func TestStatusResolvesCallers(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	defs := []ratelimit.Definition{
		group("devs", 60, 100, 50),
		group("devs", 86400, 5000, 0),
		{Axis: "caller_target", EntityType: "group", Name: "devs", WindowSeconds: 60, UserMaxRequests: ptr(30), Enabled: true},
		group("agents", 60, 0, 20),
		{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true},
		{Axis: "target", EntityType: "server_group", Name: "fragile", WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"mcpgw"}, Enabled: true},
	}
	for _, d := range defs {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"devs"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "client", Subject: "bot", Groups: []string{"agents"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	ids := func(r client.StatusResult) []string {
		var out []string
		for _, d := range r.Definitions {
			out = append(out, d.ID)
		}
		slices.Sort(out)
		return out
	}
	r, err := c.Status(ctx, client.StatusQuery{Username: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"caller:group:devs:60", "caller:group:devs:86400", "caller_target:group:devs:60"}
	if !slices.Equal(ids(r), want) || !slices.Equal(r.Groups, []string{"devs"}) {
		t.Errorf("status of alice = %v groups %v, want %v", ids(r), r.Groups, want)
	}
	r, _ = c.Status(ctx, client.StatusQuery{Identity: "agents"})
	if !slices.Equal(ids(r), []string{"caller:group:agents:60"}) {
		t.Errorf("status of group agents = %v", ids(r))
	}
	r, _ = c.Status(ctx, client.StatusQuery{ClientID: "bot", EntityType: "mcp_server", Name: "/mcpgw"})
	want = []string{"caller:group:agents:60", "target:mcp_server:mcpgw:60", "target:server_group:fragile:60"}
	if !slices.Equal(ids(r), want) {
		t.Errorf("status of bot on mcpgw = %v, want %v", ids(r), want)
	}
	// The reference's scripts read the definitions by axis: "caller",
	// "target" (and "caller_target"), always arrays.
	byAxis := func(ds []ratelimit.Definition) []string {
		out := []string{}
		for _, d := range ds {
			out = append(out, d.ID)
		}
		slices.Sort(out)
		return out
	}
	r, _ = c.Status(ctx, client.StatusQuery{Username: "alice", EntityType: "mcp_server", Name: "mcpgw"})
	for _, tt := range []struct {
		key       string
		got, want []string
	}{
		{"caller", byAxis(r.Caller), []string{"caller:group:devs:60", "caller:group:devs:86400"}},
		{"target", byAxis(r.Target), []string{"target:mcp_server:mcpgw:60", "target:server_group:fragile:60"}},
		{"caller_target", byAxis(r.CallerTarget), []string{"caller_target:group:devs:60"}},
	} {
		if !slices.Equal(tt.got, tt.want) {
			t.Errorf("status %q = %v, want %v", tt.key, tt.got, tt.want)
		}
	}
	r, _ = c.Status(ctx, client.StatusQuery{Identity: "nobody"})
	if r.Caller == nil || r.Target == nil || r.CallerTarget == nil {
		t.Errorf("status of a group without definitions: caller %v, target %v, caller_target %v; want [] each", r.Caller, r.Target, r.CallerTarget)
	}
}

func TestTokensEndToEnd(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	tok, err := c.CreateToken(ctx, client.CreateTokenRequest{Name: "ci-viewer", Role: "viewer", ExpiresInSeconds: 3600})
	if err != nil || !strings.HasPrefix(tok.Secret, "rlt_") || tok.ExpiresAt == nil {
		t.Fatalf("create = %+v, %v", tok, err)
	}
	viewer := clientFor(t, env, tok.Secret)
	if _, err := viewer.ListDefinitions(ctx, client.DefinitionFilter{}); err != nil {
		t.Errorf("new viewer token cannot read: %v", err)
	}
	_, err = viewer.PutDefinition(ctx, group("g", 60, 30, 0), client.WriteOptions{})
	wantStatus(t, err, client.ErrForbidden, "role viewer")
	_, err = c.CreateToken(ctx, client.CreateTokenRequest{Name: "ci-viewer", Role: "admin"})
	wantStatus(t, err, client.ErrConflict, "")
	_, err = c.CreateToken(ctx, client.CreateTokenRequest{Name: "bad name", Role: "root"})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || len(apiErr.Errors) != 2 {
		t.Errorf("bad token request: %v, want two field errors", err)
	}
	tokens, _ := c.ListTokens(ctx)
	if len(tokens) != 2 {
		t.Errorf("tokens = %+v", tokens)
	}
	if err := c.RevokeToken(ctx, "ci-viewer"); err != nil {
		t.Fatal(err)
	}
	_, err = viewer.ListDefinitions(ctx, client.DefinitionFilter{})
	wantStatus(t, err, client.ErrUnauthorized, "revoked")
	wantStatus(t, c.RevokeToken(ctx, "ci-viewer"), client.ErrNotFound, "")
}

func TestServiceEndpoints(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	v, err := c.Version(ctx)
	if err != nil || v.Version == "" || v.SchemaVersion < 1 || v.SchemaVersion != v.SchemaLatest {
		t.Errorf("version = %+v, %v", v, err)
	}
	if err := c.Healthz(ctx); err != nil {
		t.Error(err)
	}
	if err := c.Readyz(ctx); err != nil {
		t.Error(err)
	}
	a := do(t, env.URL, call{method: "GET", path: "/metrics", token: env.AdminToken})
	for _, want := range []string{`rlapi_http_requests_total{code="200",method="GET",route="GET /api/version"}`, "rlapi_db_pool_max_connections",
		"rlapi_http_request_duration_seconds_bucket", "rlctl_enforce_snapshot_load_seconds_count"} {
		if !strings.Contains(string(a.body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(a.body), "caller:group") {
		t.Error("metrics carry ids in labels")
	}
}

// TestConcurrentWritesKeepLastAcknowledged has 32 goroutines upsert and
// toggle the same definitions. Every acknowledged change gets a distinct
// version, the final row is the write acknowledged with the highest version,
// and the audit log holds exactly one row per change.
func TestConcurrentWritesKeepLastAcknowledged(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	ids := []string{"caller:group:g0:60", "caller:group:g1:60", "caller:group:g2:60"}
	type ack struct {
		version int64
		desc    string
		enabled bool
	}
	acks := make(chan struct {
		id string
		a  ack
	}, 32*30)
	errs := make(chan error, 32*30)
	done := make(chan struct{})
	for w := range 32 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 10 {
				id := ids[(w+i)%len(ids)]
				name := strings.Split(id, ":")[2]
				if i%3 == 2 {
					d, _, err := c.SetDefinitionEnabled(ctx, id, i%2 == 0, client.WriteOptions{})
					if errors.Is(err, client.ErrNotFound) {
						continue
					}
					if err != nil {
						errs <- err
						continue
					}
					acks <- struct {
						id string
						a  ack
					}{id, ack{d.Version, d.Description, d.Enabled}}
					continue
				}
				d := group(name, 60, 30+w, 0)
				d.Description = fmt.Sprintf("w%d-%d", w, i)
				d.Enabled = w%2 == 0
				res, err := c.PutDefinition(ctx, d, client.WriteOptions{})
				if err != nil {
					errs <- err
					continue
				}
				acks <- struct {
					id string
					a  ack
				}{id, ack{res.Value.Version, res.Value.Description, res.Value.Enabled}}
			}
		}()
	}
	for range 32 {
		<-done
	}
	close(acks)
	close(errs)
	for err := range errs {
		t.Errorf("write failed: %v", err)
	}
	last := map[string]ack{}
	for a := range acks {
		if a.a.version > last[a.id].version {
			last[a.id] = a.a
		}
	}
	for _, id := range ids {
		d, err := c.GetDefinition(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Version != last[id].version || d.Description != last[id].desc || d.Enabled != last[id].enabled {
			t.Errorf("%s final = v%d %q %v, last acknowledged = v%d %q %v", id, d.Version, d.Description, d.Enabled,
				last[id].version, last[id].desc, last[id].enabled)
		}
		var rows int64
		if err := env.Store.Pool().QueryRow(ctx, `select count(*) from rl_audit_log where resource_id = $1`, id).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		// Every change bumps the version by one and writes one row.
		if rows != d.Version {
			t.Errorf("%s: %d audit rows for version %d; want one per change", id, rows, d.Version)
		}
	}
}

func TestRequarantineAfterExpiryStartsANewQuarantine(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	first, err := c.Quarantine(ctx, "client", "bot", client.QuarantineRequest{Reason: "one", ExpiresInSeconds: 60}, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.Pool().Exec(ctx, `update rl_memberships set quarantine_expires_at = now() - interval '1 second',
		quarantined_at = now() - interval '1 hour' where subject = 'bot'`); err != nil {
		t.Fatal(err)
	}
	again, err := c.Quarantine(ctx, "client", "bot", client.QuarantineRequest{Reason: "two"}, client.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Created || again.Entry.Expired || again.Entry.ExpiresAt != nil {
		t.Errorf("re-quarantine after expiry = %+v, want a new, unexpired quarantine (201)", again)
	}
	if again.Entry.QuarantinedAt == nil || again.Entry.QuarantinedAt.Before(*first.Entry.QuarantinedAt) {
		t.Errorf("start time %v carried over from the expired quarantine", again.Entry.QuarantinedAt)
	}
}
