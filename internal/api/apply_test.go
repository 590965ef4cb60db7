package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// sampleState is a small desired state with one object of every shape:
// caller, caller_target and target definitions, a server group, the callers
// sentinel switched off, users and clients in groups, a quarantined caller
// and target, and an administrator.
func sampleState() client.State {
	expires := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	return client.State{
		Definitions: []ratelimit.Definition{
			group("developers", 60, 100, 50),
			{Axis: "caller_target", EntityType: "group", Name: "partners", WindowSeconds: 3600, UserMaxRequests: ptr(5), Enabled: true, Mode: "shadow"},
			{Axis: "target", EntityType: "mcp_server", Name: "/mcpgw/", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: true, Description: "the gateway"},
			{Axis: "target", EntityType: "server_group", Name: "fragile", WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"aws-kb", "/airegistry-tools"}, Enabled: true, FailClosed: true},
			{Axis: "quarantine", EntityType: "group", Name: "quarantine-callers", WindowSeconds: 1, Enabled: false, Description: "off during the migration"},
		},
		Memberships: []ratelimit.Membership{
			{SubjectType: "user", Subject: "alice", Groups: []string{"developers"}},
			{SubjectType: "client", Subject: "ci-runner", Groups: []string{"developers", "partners"}},
			{SubjectType: "user", Subject: "mallory", Groups: []string{"developers", "quarantine-callers"}, QuarantineReason: "scraping", QuarantineExpiresAt: &expires},
			{SubjectType: "server", Subject: "flaky", Groups: []string{"quarantine-targets"}},
		},
		Admins: []ratelimit.Admin{{SubjectType: "user", Subject: "carol", Note: "on call"}},
	}
}

// sampleSize is the number of objects in sampleState.
const sampleSize = 5 + 4 + 1

// stateSnapshot is what a test compares before and after: every object with
// its version, and the number of audit rows.
type stateSnapshot struct {
	definitions map[string]ratelimit.Definition
	memberships map[string]ratelimit.Membership
	admins      map[string]ratelimit.Admin
	audit       int
}

func takeStateSnapshot(t *testing.T, c *client.Client, env *apitest.Env) stateSnapshot {
	t.Helper()
	ctx := context.Background()
	s := stateSnapshot{definitions: map[string]ratelimit.Definition{}, memberships: map[string]ratelimit.Membership{},
		admins: map[string]ratelimit.Admin{}, audit: auditCount(t, env)}
	defs, err := c.ListAllDefinitions(ctx, client.DefinitionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		s.definitions[d.ID] = d
	}
	mems, err := c.ListAllMemberships(ctx, client.MembershipFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		s.memberships[m.ID] = m
	}
	admins, err := c.ListAdmins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range admins {
		s.admins[a.Key()] = a
	}
	return s
}

// diffStateSnapshots describes how two snapshots differ, "" when they do not:
// ids, versions, update times and audit rows.
func diffStateSnapshots(a, b stateSnapshot) string {
	var out []string
	if a.audit != b.audit {
		out = append(out, fmt.Sprintf("audit rows %d -> %d", a.audit, b.audit))
	}
	for id, d := range a.definitions {
		e, ok := b.definitions[id]
		switch {
		case !ok:
			out = append(out, "definition "+id+" vanished")
		case e.Version != d.Version || !e.UpdatedAt.Equal(*d.UpdatedAt):
			out = append(out, fmt.Sprintf("definition %s version %d -> %d", id, d.Version, e.Version))
		}
	}
	for id := range b.definitions {
		if _, ok := a.definitions[id]; !ok {
			out = append(out, "definition "+id+" appeared")
		}
	}
	for id, m := range a.memberships {
		e, ok := b.memberships[id]
		switch {
		case !ok:
			out = append(out, "membership "+id+" vanished")
		case e.Version != m.Version || !e.UpdatedAt.Equal(*m.UpdatedAt):
			out = append(out, fmt.Sprintf("membership %s version %d -> %d", id, m.Version, e.Version))
		}
	}
	for id := range b.memberships {
		if _, ok := a.memberships[id]; !ok {
			out = append(out, "membership "+id+" appeared")
		}
	}
	for id, ad := range a.admins {
		if e, ok := b.admins[id]; !ok || e.Note != ad.Note {
			out = append(out, "admin "+id+" changed or vanished")
		}
	}
	for id := range b.admins {
		if _, ok := a.admins[id]; !ok {
			out = append(out, "admin "+id+" appeared")
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

func mustApply(t *testing.T, c *client.Client, s client.State, o client.ApplyOptions) client.ApplyResult {
	t.Helper()
	res, err := c.Apply(context.Background(), s, o)
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	return res
}

func applyCounts(r client.ApplyResult) string {
	s := fmt.Sprintf("created=%d updated=%d deleted=%d unchanged=%d", r.Created, r.Updated, r.Deleted, r.Unchanged)
	if r.Quarantined+r.Released > 0 {
		s += fmt.Sprintf(" quarantined=%d released=%d", r.Quarantined, r.Released)
	}
	return s
}

func TestApplyIsIdempotent(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()

	first := mustApply(t, c, sampleState(), client.ApplyOptions{Quarantine: true})
	// The sentinel exists already (from the migration): an update. The
	// target server:flaky holds only quarantine-targets: it is reported as
	// quarantine/server:flaky added, not as a membership created; mallory
	// gets both lines.
	if got, want := applyCounts(first), fmt.Sprintf("created=%d updated=1 deleted=0 unchanged=0 quarantined=2 released=0", sampleSize-2); got != want {
		t.Fatalf("first apply: %s, want %s", got, want)
	}
	if first.DryRun || len(first.Changes) != sampleSize+1 {
		t.Errorf("first apply: dry_run=%v, %d changes, want %d", first.DryRun, len(first.Changes), sampleSize+1)
	}
	sorted := slices.IsSortedFunc(first.Changes, func(a, b client.ApplyChange) int {
		return strings.Compare(a.ResourceType+"\x00"+a.ID, b.ResourceType+"\x00"+b.ID)
	})
	if !sorted {
		t.Errorf("changes not sorted by resource type, then id: %+v", first.Changes)
	}

	// Normalized as the per-object endpoints store them.
	sg, err := c.GetDefinition(ctx, "target:server_group:fragile:60")
	if err != nil || !slices.Equal(sg.Members, []string{"aws-kb", "airegistry-tools"}) || sg.Version != 1 || sg.UpdatedBy != "test-admin" {
		t.Errorf("server group = %+v, %v", sg, err)
	}
	if _, err := c.GetDefinition(ctx, "target:mcp_server:mcpgw:60"); err != nil {
		t.Errorf("normalized mcp_server name: %v", err)
	}
	mallory, err := c.GetMembership(ctx, "user:mallory")
	if err != nil || mallory.QuarantinedAt == nil || mallory.QuarantineReason != "scraping" {
		t.Errorf("quarantined membership = %+v, %v; want a start time and the reason", mallory, err)
	}
	sentinel, _ := c.GetDefinition(ctx, ratelimit.SentinelCallers)
	if sentinel.Enabled || sentinel.Version != 2 {
		t.Errorf("sentinel = enabled %v version %d, want disabled at version 2", sentinel.Enabled, sentinel.Version)
	}

	before := takeStateSnapshot(t, c, env)
	second := mustApply(t, c, sampleState(), client.ApplyOptions{Quarantine: true})
	if got, want := applyCounts(second), fmt.Sprintf("created=0 updated=0 deleted=0 unchanged=%d", sampleSize); got != want {
		t.Errorf("second apply: %s, want %s", got, want)
	}
	if len(second.Changes) != 0 {
		t.Errorf("second apply changes = %+v, want none", second.Changes)
	}
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Errorf("a second identical apply changed something: %s", d)
	}

	// What the server exports (read-only fields and all) applies as a no-op
	// too, with prune: the export is the whole state.
	exported := client.State{}
	for _, d := range before.definitions {
		exported.Definitions = append(exported.Definitions, d)
	}
	for _, m := range before.memberships {
		exported.Memberships = append(exported.Memberships, m)
	}
	for _, a := range before.admins {
		exported.Admins = append(exported.Admins, a)
	}
	third := mustApply(t, c, exported, client.ApplyOptions{Quarantine: true, Prune: true})
	if got, want := applyCounts(third), fmt.Sprintf("created=0 updated=0 deleted=0 unchanged=%d", sampleSize+1); got != want {
		t.Errorf("export re-applied: %s, want %s (changes %+v)", got, want, third.Changes)
	}
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Errorf("re-applying the export changed something: %s", d)
	}
}

func TestApplyPrunesOnlyWithTheFlag(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()

	// Objects made through the per-object endpoints, not in the file.
	if _, err := c.PutDefinition(ctx, group("legacy", 60, 30, 0), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "bob", Groups: []string{"legacy"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "client", Subject: "ops"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	state := sampleState()
	res := mustApply(t, c, state, client.ApplyOptions{Quarantine: true})
	if res.Deleted != 0 {
		t.Errorf("apply without prune deleted %d objects", res.Deleted)
	}
	for _, id := range []string{"caller:group:legacy:60"} {
		if _, err := c.GetDefinition(ctx, id); err != nil {
			t.Errorf("without prune %s: %v", id, err)
		}
	}
	if _, err := c.GetMembership(ctx, "user:bob"); err != nil {
		t.Errorf("without prune user:bob: %v", err)
	}

	// The same file with prune deletes exactly the three strangers; the
	// sentinel of quarantine-targets is not in the file and stays.
	auditBefore := auditCount(t, env)
	res = mustApply(t, c, state, client.ApplyOptions{Quarantine: true, Prune: true})
	if got, want := applyCounts(res), fmt.Sprintf("created=0 updated=0 deleted=3 unchanged=%d", sampleSize); got != want {
		t.Errorf("prune: %s, want %s", got, want)
	}
	var deleted []string
	for _, ch := range res.Changes {
		if ch.Action != "delete" {
			t.Errorf("unexpected change %+v", ch)
		}
		deleted = append(deleted, ch.ResourceType+" "+ch.ID)
	}
	if want := []string{"admin client:ops", "definition caller:group:legacy:60", "membership user:bob"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %q, want %q", deleted, want)
	}
	if got := auditCount(t, env) - auditBefore; got != 3 {
		t.Errorf("prune wrote %d audit rows, want 3", got)
	}
	if _, err := c.GetDefinition(ctx, "caller:group:legacy:60"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("pruned definition: %v, want not found", err)
	}
	if _, err := c.GetDefinition(ctx, ratelimit.SentinelTargets); err != nil {
		t.Errorf("sentinel after prune: %v", err)
	}

	// Empty sections with prune delete everything of their kind but the
	// sentinels; an absent section is left alone.
	res = mustApply(t, c, client.State{Definitions: []ratelimit.Definition{}, Memberships: []ratelimit.Membership{}}, client.ApplyOptions{Quarantine: true, Prune: true})
	if got, want := applyCounts(res), "created=0 updated=0 deleted=7 unchanged=0 quarantined=0 released=2"; got != want {
		t.Errorf("empty sections with prune: %s, want %s", got, want)
	}
	snap := takeStateSnapshot(t, c, env)
	if len(snap.definitions) != 2 || len(snap.memberships) != 0 || len(snap.admins) != 1 {
		t.Errorf("after pruning to empty: %d definitions (want the 2 sentinels), %d memberships, %d admins (want carol, untouched)",
			len(snap.definitions), len(snap.memberships), len(snap.admins))
	}
	for _, id := range []string{ratelimit.SentinelCallers, ratelimit.SentinelTargets} {
		if _, ok := snap.definitions[id]; !ok {
			t.Errorf("sentinel %s was pruned", id)
		}
	}
}

func TestApplyDryRunChangesNothingAndReportsTheRealRun(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	if _, err := c.PutDefinition(ctx, group("developers", 60, 30, 0), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutDefinition(ctx, group("legacy", 60, 30, 0), client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	before := takeStateSnapshot(t, c, env)
	dry := mustApply(t, c, sampleState(), client.ApplyOptions{Quarantine: true, Prune: true, DryRun: true})
	if !dry.DryRun {
		t.Error("dry run answered dry_run=false")
	}
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Fatalf("a dry run changed something: %s", d)
	}

	real := mustApply(t, c, sampleState(), client.ApplyOptions{Quarantine: true, Prune: true})
	if real.DryRun {
		t.Error("real run answered dry_run=true")
	}
	if applyCounts(dry) != applyCounts(real) {
		t.Errorf("dry run %s, real run %s", applyCounts(dry), applyCounts(real))
	}
	if fmt.Sprint(dry.Changes) != fmt.Sprint(real.Changes) {
		t.Errorf("dry run changes\n%+v\nreal run changes\n%+v", dry.Changes, real.Changes)
	}
	if got, want := applyCounts(real), "created=7 updated=2 deleted=1 unchanged=0 quarantined=2 released=0"; got != want {
		t.Errorf("real run: %s, want %s", got, want)
	}
}

// manyGroups is n valid caller groups (enough that a failure at the end
// follows a lot of work).
func manyGroups(n int) client.State {
	s := client.State{}
	for i := range n {
		s.Definitions = append(s.Definitions, group(fmt.Sprintf("team-%04d", i), 60, 100, 0))
	}
	return s
}

func TestApplyInvalidChangesNothing(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	before := takeStateSnapshot(t, c, env)

	state := manyGroups(2000)
	state.Definitions[1999].UserMaxRequests = ptr(3) // below the floor, at the very end
	_, err := c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
	wantStatus(t, err, client.ErrBadRequest, "definitions[1999].user_max_requests 3 is below the user floor")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || len(apiErr.Errors) != 1 || apiErr.Errors[0].Field != "definitions[1999].user_max_requests" {
		t.Errorf("errors = %+v, want one naming definitions[1999].user_max_requests", apiErr)
	}
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Errorf("a refused apply changed something: %s", d)
	}

	// Every problem at once, each named by its place; duplicates (after
	// normalization) name both places.
	state = client.State{
		Definitions: []ratelimit.Definition{
			{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: ptr(10), Enabled: true},
			group("ok", 60, 100, 0),
			{Axis: "target", EntityType: "mcp_server", Name: "/mcpgw/", WindowSeconds: 60, MaxRequests: ptr(20), Enabled: true},
		},
		Memberships: []ratelimit.Membership{
			{SubjectType: "user", Subject: "a", Groups: []string{"ok"}},
			{SubjectType: "user", Subject: "b", Groups: []string{"ok"}},
			{SubjectType: "user", Subject: "c", Groups: []string{"ok"}},
			{SubjectType: "server", Subject: "d", Groups: []string{"ok"}},
		},
		Admins: []ratelimit.Admin{{SubjectType: "server", Subject: "mcpgw"}},
	}
	_, err = c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
	wantStatus(t, err, client.ErrBadRequest, "")
	errors.As(err, &apiErr)
	var fields []string
	for _, fe := range apiErr.Errors {
		fields = append(fields, fe.Field)
		if !strings.HasPrefix(fe.Message, fe.Field) {
			t.Errorf("message %q does not start with its field %q", fe.Message, fe.Field)
		}
	}
	if want := []string{"definitions[2]", "memberships[3].groups[0]", "admins[0].subject_type"}; !slices.Equal(fields, want) {
		t.Errorf("fields = %q, want %q", fields, want)
	}
	if msg := apiErr.Errors[0].Message; !strings.Contains(msg, "definitions[0]") || !strings.Contains(msg, "target:mcp_server:mcpgw:60") {
		t.Errorf("duplicate message %q does not name both places and the id", msg)
	}
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Errorf("a refused apply changed something: %s", d)
	}
}

func TestApplyFailureLateInTheTransactionRollsBack(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "carol"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A rule only the database knows, met only by the last membership: the
	// apply gets as far as writing before it fails.
	if _, err := env.Store.Pool().Exec(ctx, `alter table rl_memberships add constraint test_no_zed check (subject <> 'zed')`); err != nil {
		t.Fatal(err)
	}
	before := takeStateSnapshot(t, c, env)

	state := manyGroups(2000)
	for i := range 500 {
		state.Memberships = append(state.Memberships, ratelimit.Membership{SubjectType: "user", Subject: fmt.Sprintf("u%04d", i), Groups: []string{"team-0001"}})
	}
	state.Memberships = append(state.Memberships, ratelimit.Membership{SubjectType: "user", Subject: "zed", Groups: []string{"team-0001"}})
	_, err := c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
	wantStatus(t, err, client.ErrBadRequest, "test_no_zed")
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Errorf("an apply the database refused changed something: %s", d)
	}

	// An administrator quarantined by the last membership of a large file.
	state.Memberships[len(state.Memberships)-1] = ratelimit.Membership{SubjectType: "user", Subject: "carol", Groups: []string{"quarantine-callers"}}
	_, err = c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
	wantStatus(t, err, client.ErrForbidden, "Refusing to quarantine 'carol': it has administrator privileges")
	if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
		t.Errorf("a refused apply changed something: %s", d)
	}
}

func TestApplyRefusesToQuarantineAnAdmin(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "carol"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Quarantine(ctx, "user", "mallory", client.QuarantineRequest{Reason: "scraping"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	quarantine := func(subject string) []ratelimit.Membership {
		return []ratelimit.Membership{{SubjectType: "user", Subject: subject, Groups: []string{"developers", "quarantine-callers"}}}
	}
	before := takeStateSnapshot(t, c, env)

	tests := []struct {
		name     string
		state    client.State
		opts     client.ApplyOptions
		sentinel error
		message  string
	}{
		{"an existing admin", client.State{Memberships: quarantine("carol")}, client.ApplyOptions{Quarantine: true},
			client.ErrForbidden, "Refusing to quarantine 'carol': it has administrator privileges"},
		{"an admin of the same file", client.State{Memberships: quarantine("dave"), Admins: []ratelimit.Admin{{SubjectType: "user", Subject: "dave"}}},
			client.ApplyOptions{Quarantine: true}, client.ErrForbidden, "Refusing to quarantine 'dave': it has administrator privileges"},
		{"an admin the file keeps without prune", client.State{Memberships: quarantine("carol"), Admins: []ratelimit.Admin{}},
			client.ApplyOptions{Quarantine: true}, client.ErrForbidden, "Refusing to quarantine 'carol'"},
		{"an admin grant of a quarantined subject", client.State{Admins: []ratelimit.Admin{{SubjectType: "user", Subject: "mallory"}}},
			client.ApplyOptions{Quarantine: true}, client.ErrConflict, "'mallory' is quarantined"},
		{"dry run", client.State{Memberships: quarantine("carol")}, client.ApplyOptions{Quarantine: true, DryRun: true},
			client.ErrForbidden, "Refusing to quarantine 'carol'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Apply(ctx, tt.state, tt.opts)
			wantStatus(t, err, tt.sentinel, tt.message)
			if d := diffStateSnapshots(before, takeStateSnapshot(t, c, env)); d != "" {
				t.Errorf("a refused apply changed something: %s", d)
			}
		})
	}

	// Revoking the grant in the same apply makes the quarantine legal.
	res := mustApply(t, c, client.State{Memberships: quarantine("carol"), Admins: []ratelimit.Admin{}}, client.ApplyOptions{Quarantine: true, Prune: true})
	if got, want := applyCounts(res), "created=1 updated=0 deleted=1 unchanged=0 quarantined=1 released=1"; got != want { // carol quarantined; her grant gone, mallory released
		t.Errorf("revoke and quarantine: %s, want %s (%+v)", got, want, res.Changes)
	}
	if _, err := c.GetMembership(ctx, "user:carol"); err != nil {
		t.Errorf("carol after the grant was revoked and she was quarantined: %v", err)
	}
	admins, _ := c.ListAdmins(ctx)
	if len(admins) != 0 {
		t.Errorf("admins = %+v, want none", admins)
	}
}

func TestApplyFailsClosedWhenAdminsCannotBeRead(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	// Break the administrators' table for this database only: the apply
	// can lock it but not read it.
	if _, err := env.Store.Pool().Exec(ctx, `alter table rl_admins rename column note to note_broken`); err != nil {
		t.Fatal(err)
	}
	before := auditCount(t, env)
	state := manyGroups(100)
	state.Memberships = []ratelimit.Membership{{SubjectType: "user", Subject: "mallory", Groups: []string{"quarantine-callers"}}}
	_, err := c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
	wantStatus(t, err, client.ErrUnavailable, "cannot verify whether 'mallory' is an administrator")
	if _, err := c.GetMembership(ctx, "user:mallory"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("membership after a failed admin check: %v, want not found", err)
	}
	if _, err := c.GetDefinition(ctx, "caller:group:team-0000:60"); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("definition after a failed admin check: %v, want not found", err)
	}
	if n := auditCount(t, env); n != before {
		t.Errorf("audit rows %d -> %d", before, n)
	}
}

// TestApplyRacesPerObjectWrites runs applies that grant and quarantine
// while the per-object routes quarantine and grant the same subjects. Each
// call may be refused (403, 409), none may fail otherwise, and no
// administrator may end up quarantined.
func TestApplyRacesPerObjectWrites(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	state := manyGroups(300)
	state.Admins = []ratelimit.Admin{{SubjectType: "user", Subject: "carol"}}
	state.Memberships = []ratelimit.Membership{{SubjectType: "user", Subject: "mallory", Groups: []string{"quarantine-callers"}}}
	unrevoke := client.State{Admins: []ratelimit.Admin{}, Memberships: []ratelimit.Membership{}}

	refusedOnly := func(what string, err error) {
		if err != nil && !errors.Is(err, client.ErrForbidden) && !errors.Is(err, client.ErrConflict) {
			t.Errorf("%s: %v", what, err)
		}
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 5 {
				_, err := c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
				refusedOnly("apply", err)
				_, err = c.Apply(ctx, unrevoke, client.ApplyOptions{Quarantine: true, Prune: true})
				refusedOnly("apply prune", err)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			_, err := c.Quarantine(ctx, "user", "carol", client.QuarantineRequest{Reason: "race"}, client.WriteOptions{})
			refusedOnly("quarantine carol", err)
			_, _, err = c.Unquarantine(ctx, "user", "carol", client.WriteOptions{})
			refusedOnly("unquarantine carol", err)
		}
	})
	wg.Go(func() {
		for range 20 {
			_, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "mallory"}, client.WriteOptions{})
			refusedOnly("grant mallory", err)
			_, err = c.DeleteAdmin(ctx, "user", "mallory", client.WriteOptions{})
			if err != nil && !errors.Is(err, client.ErrNotFound) {
				t.Errorf("revoke mallory: %v", err)
			}
		}
	})
	wg.Wait()

	var clash int
	err := env.Store.Pool().QueryRow(ctx, `select count(*) from rl_admins a join rl_memberships m using (subject_type, subject)
		where 'quarantine-callers' = any (m.groups)`).Scan(&clash)
	if err != nil || clash != 0 {
		t.Errorf("%d quarantined administrators (%v)", clash, err)
	}
}

func TestApplyAuditsEveryChangeOnce(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	bot := clientFor(t, env, env.Token(t, "ci-bot", "admin"))

	mustApply(t, c, sampleState(), client.ApplyOptions{Quarantine: true})
	state := sampleState()
	state.Definitions[0].UserMaxRequests = ptr(200)                                             // updated
	state.Memberships = state.Memberships[1:]                                                   // alice pruned
	state.Admins = append(state.Admins, ratelimit.Admin{SubjectType: "client", Subject: "ops"}) // created

	since := auditCount(t, env)
	res := mustApply(t, bot, state, client.ApplyOptions{Quarantine: true, Prune: true})
	if got, want := applyCounts(res), fmt.Sprintf("created=1 updated=1 deleted=1 unchanged=%d", sampleSize-2); got != want {
		t.Fatalf("apply: %s, want %s", got, want)
	}
	page, err := c.ListAudit(ctx, client.AuditFilter{Actor: "ci-bot"})
	if err != nil {
		t.Fatal(err)
	}
	if auditCount(t, env)-since != 3 || len(page.Entries) != 3 {
		t.Fatalf("audit rows: %d new, %d by ci-bot; want 3", auditCount(t, env)-since, len(page.Entries))
	}
	var got []string
	for _, e := range page.Entries {
		got = append(got, e.Action+" "+e.ResourceType+" "+e.ResourceID)
		switch e.Action {
		case "create":
			if e.Before != nil || e.After == nil {
				t.Errorf("create entry before=%s after=%s", e.Before, e.After)
			}
		case "update":
			if e.Before == nil || e.After == nil || !strings.Contains(string(e.After), `"user_max_requests":200`) ||
				!strings.Contains(string(e.Before), `"user_max_requests":100`) {
				t.Errorf("update entry before=%s after=%s", e.Before, e.After)
			}
		case "delete":
			if e.Before == nil || e.After != nil {
				t.Errorf("delete entry before=%s after=%s", e.Before, e.After)
			}
		}
		if e.RequestID == "" {
			t.Errorf("entry %d has no request id", e.ID)
		}
	}
	slices.Sort(got)
	want := []string{"create admin client:ops", "delete membership user:alice", "update definition caller:group:developers:60"}
	if !slices.Equal(got, want) {
		t.Errorf("audit entries %q, want %q", got, want)
	}
}

func TestApplyReportsFieldChanges(t *testing.T) {
	t.Parallel()
	c, _ := newClient(t)
	ctx := context.Background()
	mustApply(t, c, sampleState(), client.ApplyOptions{Quarantine: true})

	state := sampleState()
	state.Definitions[0].UserMaxRequests = ptr(200)
	state.Definitions[0].AgentMaxRequests = nil
	state.Definitions[0].Description = "people"
	state.Memberships[0].Groups = []string{"developers", "partners"}
	state.Admins[0].Note = ""
	res := mustApply(t, c, state, client.ApplyOptions{Quarantine: true})
	if got, want := applyCounts(res), fmt.Sprintf("created=0 updated=3 deleted=0 unchanged=%d", sampleSize-3); got != want {
		t.Fatalf("apply: %s, want %s", got, want)
	}
	got := map[string]string{}
	for _, ch := range res.Changes {
		if ch.Action != "update" {
			t.Errorf("change %+v, want updates only", ch)
		}
		var parts []string
		for _, f := range ch.Fields {
			parts = append(parts, fmt.Sprintf("%s: %v -> %v", f.Field, f.From, f.To))
		}
		got[ch.ResourceType+" "+ch.ID] = strings.Join(parts, "; ")
	}
	want := map[string]string{
		"definition caller:group:developers:60": "agent_max_requests: 50 -> <nil>; description: <nil> -> people; user_max_requests: 100 -> 200",
		"membership user:alice":                 "groups: [developers] -> [developers partners]",
		"admin user:carol":                      "note: on call -> <nil>",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s fields = %q, want %q", k, got[k], v)
		}
	}
	d, err := c.GetDefinition(ctx, "caller:group:developers:60")
	if err != nil || d.Version != 2 || *d.UserMaxRequests != 200 || d.AgentMaxRequests != nil {
		t.Errorf("updated definition = %+v, %v; want version 2", d, err)
	}
	m, _ := c.GetMembership(ctx, "user:alice")
	if m.Version != 2 {
		t.Errorf("membership version %d, want 2", m.Version)
	}
}

// postApply sends a raw body to POST /api/apply and returns the status and
// the problem's fields.
func postApply(t *testing.T, env *apitest.Env, query, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.URL+"/api/apply"+query, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := contractHTTPClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	return resp.StatusCode, out
}

func TestApplyDecodeErrors(t *testing.T) {
	t.Parallel()
	_, env := newClient(t)
	tests := []struct {
		name, query, body string
		status            int
		fields            []string // the problem's errors, by field
		detail            string
	}{
		{"typo in a field", "", `{"definitions":[{"axis":"caller","entity_type":"group","name":"a","window_seconds":60,"user_max_requests":50},
			{"axis":"caller","entity_type":"group","name":"b","window_seconds":60,"user_max_request":50}]}`,
			400, []string{"definitions[1].user_max_request"}, "unknown field"},
		{"wrong type", "", `{"memberships":[{"subject_type":"user","subject":"a","groups":"developers"}],
			"admins":[{"subject_type":"user","subject":7}]}`,
			400, []string{"memberships[0].groups", "admins[0].subject"}, "must be an array"},
		{"unknown admin field", "", `{"admins":[{"subject_type":"user","subject":"a","role":"root"}]}`,
			400, []string{"admins[0].role"}, "unknown field"},
		{"decode and validation problems together, in order", "", `{"admins":[{"subject_type":"user","subject":"a","x":1}],
			"definitions":[{"axis":"caller","entity_type":"group","name":"a","window_seconds":0,"user_max_requests":50}]}`,
			400, []string{"definitions[0].window_seconds", "admins[0].x"}, "window_seconds"},
		{"unknown section", "", `{"tokens":[]}`, 400, []string{"tokens"}, "unknown field"},
		{"section not an array", "", `{"definitions":{}}`, 400, []string{"definitions"}, "must be an array"},
		{"prune not a boolean", "", `{"prune":"yes"}`, 400, []string{"prune"}, "true or false"},
		{"malformed", "", `{"definitions":[{"axis":`, 400, nil, "malformed JSON"},
		{"not an object", "", `[]`, 400, nil, "must be a JSON object"},
		{"two values", "", `{} {}`, 400, nil, "more than one JSON value"},
		{"empty", "", ``, 400, nil, "empty"},
		{"bad dry_run", "?dry_run=perhaps", `{}`, 400, []string{"dry_run"}, "dry_run: must be true or false"},
		{"dry run in the body", "", `{"dry_run":true,"definitions":[{"axis":"caller","entity_type":"group","name":"a","window_seconds":60,"user_max_requests":50}]}`,
			200, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out := postApply(t, env, tt.query, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, out)
			}
			if status == 200 {
				if out["dry_run"] != true || out["created"] != 1.0 {
					t.Errorf("answer %v, want a dry run creating 1", out)
				}
				return
			}
			var fields []string
			errs, _ := out["errors"].([]any)
			for _, e := range errs {
				fields = append(fields, e.(map[string]any)["field"].(string))
			}
			if !slices.Equal(fields, tt.fields) {
				t.Errorf("fields %q, want %q (%v)", fields, tt.fields, out)
			}
			if detail, _ := out["detail"].(string); !strings.Contains(detail, tt.detail) {
				t.Errorf("detail %q does not contain %q", detail, tt.detail)
			}
		})
	}
	if n := auditCount(t, env); n != 0 {
		t.Errorf("%d audit rows after refused and dry applies", n)
	}
}

func TestApplyRequestShape(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()

	viewer := clientFor(t, env, env.Token(t, "viewer", "viewer"))
	_, err := viewer.Apply(ctx, sampleState(), client.ApplyOptions{Quarantine: true})
	wantStatus(t, err, client.ErrForbidden, "")

	// An empty state (every section absent) changes nothing, even with prune.
	res := mustApply(t, c, client.State{}, client.ApplyOptions{Quarantine: true, Prune: true})
	if applyCounts(res) != "created=0 updated=0 deleted=0 unchanged=0" || res.Changes == nil {
		t.Errorf("empty apply: %s, changes %#v", applyCounts(res), res.Changes)
	}
}
