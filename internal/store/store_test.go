package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func ptr[T any](v T) *T { return &v }

func callerGroup(name string, window, user int) ratelimit.Definition {
	return ratelimit.Definition{
		Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: name,
		WindowSeconds: window, UserMaxRequests: ptr(user), Enabled: true,
	}
}

func put(t *testing.T, s *store.Store, d ratelimit.Definition, w store.Write) (after ratelimit.Definition, before *ratelimit.Definition, err error) {
	t.Helper()
	err = s.InTx(context.Background(), func(q *store.Queries) error {
		res, err := q.PutDefinition(context.Background(), d, w)
		after, before = res.After, res.Before
		return err
	})
	return after, before, err
}

func TestSentinelsExistAfterMigrate(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	for _, id := range []string{ratelimit.SentinelCallers, ratelimit.SentinelTargets} {
		d, err := s.GetDefinition(context.Background(), id)
		if err != nil {
			t.Fatalf("sentinel %s: %v", id, err)
		}
		if !d.Enabled || d.Axis != ratelimit.AxisQuarantine || d.WindowSeconds != 1 {
			t.Errorf("sentinel %s = %+v, want an enabled quarantine definition with window 1", id, d)
		}
	}
	d, _ := s.GetDefinition(context.Background(), ratelimit.SentinelCallers)
	if d.Scope != "caller" {
		t.Errorf("callers sentinel scope = %q, want caller", d.Scope)
	}
	d, _ = s.GetDefinition(context.Background(), ratelimit.SentinelTargets)
	if d.Scope != "target" {
		t.Errorf("targets sentinel scope = %q, want target", d.Scope)
	}
}

func TestSentinelCannotBeDeleted(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	err := s.InTx(context.Background(), func(q *store.Queries) error {
		_, err := q.DeleteDefinition(context.Background(), ratelimit.SentinelCallers, store.Write{})
		return err
	})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("delete sentinel: err = %v, want ErrInvalid", err)
	}
	if _, err := s.GetDefinition(context.Background(), ratelimit.SentinelCallers); err != nil {
		t.Fatalf("sentinel gone after refused delete: %v", err)
	}
}

func TestDefinitionLifecycle(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()

	created, before, err := put(t, s, callerGroup("devs", 60, 100), store.Write{Actor: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if before != nil {
		t.Errorf("create returned a before-image: %+v", before)
	}
	if created.ID != "caller:group:devs:60" || created.Version != 1 || created.UpdatedBy != "alice" || created.Mode != "enforce" {
		t.Errorf("created = %+v", created)
	}

	got, err := s.GetDefinition(ctx, "caller:group:devs:60")
	if err != nil {
		t.Fatal(err)
	}
	if *got.UserMaxRequests != 100 || got.AgentMaxRequests != nil {
		t.Errorf("read back limits user=%v agent=%v, want 100 and absent", got.UserMaxRequests, got.AgentMaxRequests)
	}

	upd := callerGroup("devs", 60, 200)
	upd.AgentMaxRequests = ptr(50)
	updated, before, err := put(t, s, upd, store.Write{Actor: "bob", IfVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if before == nil || *before.UserMaxRequests != 100 {
		t.Errorf("before-image = %+v, want the version with 100", before)
	}
	if updated.Version != 2 || *updated.UserMaxRequests != 200 || *updated.AgentMaxRequests != 50 || updated.UpdatedBy != "bob" {
		t.Errorf("updated = %+v, want version 2 with 200/50 by bob", updated)
	}
	if !updated.CreatedAt.Equal(*created.CreatedAt) {
		t.Errorf("created_at changed on update: %v -> %v", created.CreatedAt, updated.CreatedAt)
	}

	// The same content again writes nothing and keeps the version.
	same := upd
	same.Mode = "enforce"
	again, _, err := put(t, s, same, store.Write{Actor: "dave"})
	if err != nil || again.Version != 2 || again.UpdatedBy != "bob" {
		t.Errorf("identical put = %+v, %v; want version 2 still by bob", again, err)
	}

	// A stale version is refused and changes nothing.
	_, _, err = put(t, s, callerGroup("devs", 60, 999), store.Write{IfVersion: 1})
	if !errors.Is(err, store.ErrPreconditionFailed) {
		t.Fatalf("stale put: err = %v, want ErrPreconditionFailed", err)
	}
	got, _ = s.GetDefinition(ctx, "caller:group:devs:60")
	if *got.UserMaxRequests != 200 || got.Version != 2 {
		t.Errorf("after stale put: %+v, want unchanged version 2", got)
	}

	// Toggling bumps the version; setting the same value does not.
	err = s.InTx(ctx, func(q *store.Queries) error {
		after, _, err := q.SetDefinitionEnabled(ctx, "caller:group:devs:60", false, store.Write{Actor: "carol"})
		if err == nil && (after.Enabled || after.Version != 3) {
			t.Errorf("disabled = %+v, want enabled=false version 3", after)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.InTx(ctx, func(q *store.Queries) error {
		after, _, err := q.SetDefinitionEnabled(ctx, "caller:group:devs:60", false, store.Write{Actor: "carol"})
		if err == nil && after.Version != 3 {
			t.Errorf("no-op disable bumped version to %d", after.Version)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	err = s.InTx(ctx, func(q *store.Queries) error {
		_, err := q.DeleteDefinition(ctx, "caller:group:devs:60", store.Write{IfVersion: 3})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetDefinition(ctx, "caller:group:devs:60"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get after delete: err = %v, want ErrNotFound", err)
	}
}

func TestDatabaseConstraintsRefuseBadDefinitions(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	bad := map[string]ratelimit.Definition{
		"window 0":                {Axis: "caller", EntityType: "group", Name: "g", WindowSeconds: 0, UserMaxRequests: ptr(30)},
		"window over a day":       {Axis: "caller", EntityType: "group", Name: "g", WindowSeconds: 86401, UserMaxRequests: ptr(30)},
		"unknown axis":            {Axis: "galaxy", EntityType: "group", Name: "g", WindowSeconds: 60, UserMaxRequests: ptr(30)},
		"target without max":      {Axis: "target", EntityType: "mcp_server", Name: "s", WindowSeconds: 60},
		"group without limits":    {Axis: "caller", EntityType: "group", Name: "g", WindowSeconds: 60},
		"zero limit":              {Axis: "target", EntityType: "mcp_server", Name: "s", WindowSeconds: 60, MaxRequests: ptr(0)},
		"reserved name on caller": {Axis: "caller", EntityType: "group", Name: "quarantine-callers", WindowSeconds: 60, UserMaxRequests: ptr(30)},
		"target on group entity":  {Axis: "target", EntityType: "group", Name: "g", WindowSeconds: 60, MaxRequests: ptr(5)},
		"server group no members": {Axis: "target", EntityType: "server_group", Name: "g", WindowSeconds: 60, MaxRequests: ptr(5)},
	}
	for name, d := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, _, err := put(t, s, d, store.Write{})
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestListDefinitionsFilters(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	defs := []ratelimit.Definition{
		callerGroup("devs", 60, 100),
		callerGroup("devs", 86400, 5000),
		callerGroup("ops", 60, 100),
		{Axis: "target", EntityType: "mcp_server", Name: "mcpgw", WindowSeconds: 60, MaxRequests: ptr(500), Enabled: false},
		{Axis: "target", EntityType: "server_group", Name: "fragile", WindowSeconds: 60, MaxRequests: ptr(100), Members: []string{"mcpgw", "aws-kb"}, Enabled: true},
	}
	for _, d := range defs {
		if _, _, err := put(t, s, d, store.Write{}); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(f store.DefinitionFilter) []string {
		t.Helper()
		list, err := s.ListDefinitions(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range list {
			out = append(out, d.ID)
		}
		return out
	}
	cases := []struct {
		name string
		f    store.DefinitionFilter
		want []string
	}{
		{"axis", store.DefinitionFilter{Axis: "target"}, []string{"target:mcp_server:mcpgw:60", "target:server_group:fragile:60"}},
		{"entity type", store.DefinitionFilter{EntityType: "server_group"}, []string{"target:server_group:fragile:60"}},
		{"name", store.DefinitionFilter{Name: "devs"}, []string{"caller:group:devs:60", "caller:group:devs:86400"}},
		{"disabled", store.DefinitionFilter{Enabled: ptr(false)}, []string{"target:mcp_server:mcpgw:60"}},
		{"group by name", store.DefinitionFilter{Group: "ops"}, []string{"caller:group:ops:60"}},
		{"group by member", store.DefinitionFilter{Group: "aws-kb"}, []string{"target:server_group:fragile:60"}},
		{"first page", store.DefinitionFilter{Axis: "caller", Limit: 2}, []string{"caller:group:devs:60", "caller:group:devs:86400"}},
		{"next page", store.DefinitionFilter{Axis: "caller", Limit: 2, After: "caller:group:devs:86400"}, []string{"caller:group:ops:60"}},
	}
	for _, c := range cases {
		if got := ids(c.f); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestConcurrentUpdatesLoseNothing runs read-modify-write cycles on one row
// from many goroutines, each retrying on a stale version, the way an If-Match
// client does. Every acknowledged change must be in the final row.
func TestConcurrentUpdatesLoseNothing(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	base := ratelimit.Definition{Axis: "target", EntityType: "server_group", Name: "pool", WindowSeconds: 60,
		MaxRequests: ptr(10), Members: []string{"seed"}, Enabled: true}
	if _, _, err := put(t, s, base, store.Write{}); err != nil {
		t.Fatal(err)
	}
	const writers = 16
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			member := fmt.Sprintf("srv-%02d", i)
			for {
				cur, err := s.GetDefinition(ctx, base.Key())
				if err != nil {
					t.Error(err)
					return
				}
				next := cur
				next.Members = append(slices.Clone(cur.Members), member)
				_, _, err = put(t, s, next, store.Write{IfVersion: cur.Version})
				if errors.Is(err, store.ErrPreconditionFailed) {
					continue
				}
				if err != nil {
					t.Error(err)
				}
				return
			}
		})
	}
	wg.Wait()
	final, err := s.GetDefinition(ctx, base.Key())
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Members) != writers+1 {
		t.Errorf("final members = %v (%d), want seed plus %d writers", final.Members, len(final.Members), writers)
	}
	if final.Version != writers+1 {
		t.Errorf("final version = %d, want %d (one bump per acknowledged write)", final.Version, writers+1)
	}
}

func TestNotifyFiresOnChange(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := store.Open(ctx, dsn, store.Opts{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	listener, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "listen rlctl_changes"); err != nil {
		t.Fatal(err)
	}
	changes := []struct {
		table string
		do    func(q *store.Queries) error
	}{
		{"rl_definitions", func(q *store.Queries) error {
			_, err := q.PutDefinition(ctx, callerGroup("g", 60, 30), store.Write{})
			return err
		}},
		{"rl_memberships", func(q *store.Queries) error {
			_, err := q.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"g"}}, store.Write{})
			return err
		}},
		{"rl_admins", func(q *store.Queries) error {
			_, _, err := q.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "root"}, "test")
			return err
		}},
	}
	for _, c := range changes {
		if err := s.InTx(ctx, c.do); err != nil {
			t.Fatal(err)
		}
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("waiting for notification of %s: %v", c.table, err)
		}
		if ch := store.ParseChange(n.Payload); n.Channel != "rlctl_changes" || ch.Table != c.table || ch.All {
			t.Errorf("notification = %s %q, want rlctl_changes naming the rows of %q", n.Channel, n.Payload, c.table)
		}
	}
}

func TestMembershipsAndGroups(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	past := time.Now().Add(-time.Hour)
	ms := []ratelimit.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"devs", "ops"}},
		{SubjectType: "client", Subject: "alice", Groups: []string{"agents"}},
		{SubjectType: "user", Subject: "bob", Groups: []string{"devs", "quarantine-callers"}, QuarantineReason: "leak"},
		{SubjectType: "user", Subject: "carol", Groups: []string{"quarantine-callers"}, QuarantineExpiresAt: &past},
		{SubjectType: "server", Subject: "mcpgw", Groups: []string{"quarantine-targets"}},
	}
	for _, m := range ms {
		err := s.InTx(ctx, func(q *store.Queries) error {
			_, err := q.PutMembership(ctx, m, store.Write{})
			return err
		})
		if err != nil {
			t.Fatalf("put %s: %v", m.Key(), err)
		}
	}
	list, err := s.ListMemberships(ctx, store.MembershipFilter{Group: "devs"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range list {
		got = append(got, m.ID)
	}
	if want := []string{"user:alice", "user:bob"}; !slices.Equal(got, want) {
		t.Errorf("members of devs = %v, want %v", got, want)
	}
	page, err := s.ListMemberships(ctx, store.MembershipFilter{After: "user:alice", Limit: 1})
	if err != nil || len(page) != 1 || page[0].ID != "user:bob" {
		t.Errorf("page after user:alice = %v (%v), want [user:bob]", page, err)
	}

	// A user may not join the target kill switch, even past the application.
	err = s.InTx(ctx, func(q *store.Queries) error {
		_, err := q.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "dave", Groups: []string{"quarantine-targets"}}, store.Write{})
		return err
	})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("user in quarantine-targets: err = %v, want ErrInvalid", err)
	}
}

func TestTokens(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	hash := make([]byte, 32)
	hash[0] = 1
	if _, err := s.CreateToken(ctx, "ci", "admin", hash, nil); err != nil {
		t.Fatal(err)
	}
	other := make([]byte, 32)
	other[0] = 2
	if _, err := s.CreateToken(ctx, "ci", "viewer", other, nil); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second live token named ci: err = %v, want ErrConflict", err)
	}
	tok, err := s.TokenByHash(ctx, hash)
	if err != nil || tok.Name != "ci" || tok.Role != "admin" {
		t.Fatalf("token by hash = %+v, %v", tok, err)
	}
	if _, err := s.RevokeToken(ctx, "ci", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeToken(ctx, "ci", time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoke twice: err = %v, want ErrNotFound", err)
	}
	tok, _ = s.TokenByHash(ctx, hash)
	if tok.RevokedAt == nil {
		t.Error("revoked token has no revoked_at")
	}
	// The name of a revoked token can be used again.
	if _, err := s.CreateToken(ctx, "ci", "viewer", other, nil); err != nil {
		t.Errorf("reuse revoked name: %v", err)
	}
}

func TestAuditFilters(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	entries := []store.Audit{
		{Actor: "alice", Action: "create", ResourceType: "definition", ResourceID: "caller:group:a:60", After: map[string]int{"v": 1}},
		{Actor: "bob", Action: "delete", ResourceType: "membership", ResourceID: "user:x", Before: map[string]int{"v": 1}},
		{Actor: "alice", Action: "update", ResourceType: "definition", ResourceID: "caller:group:b:60"},
	}
	for _, e := range entries {
		if err := s.InsertAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.ListAudit(ctx, store.AuditFilter{})
	if err != nil || len(all) != 3 || all[0].Action != "update" {
		t.Fatalf("all audit (newest first) = %+v, %v", all, err)
	}
	if all[2].After == nil || string(all[2].After) != `{"v": 1}` || all[2].Before != nil {
		t.Errorf("first entry before/after = %s / %s", all[2].Before, all[2].After)
	}
	byActor, _ := s.ListAudit(ctx, store.AuditFilter{Actor: "bob"})
	if len(byActor) != 1 || byActor[0].ResourceID != "user:x" {
		t.Errorf("by actor bob = %+v", byActor)
	}
	byRes, _ := s.ListAudit(ctx, store.AuditFilter{Resource: "definition/caller:group:b:60"})
	if len(byRes) != 1 || byRes[0].Action != "update" {
		t.Errorf("by resource = %+v", byRes)
	}
	follow, _ := s.ListAudit(ctx, store.AuditFilter{After: all[2].ID})
	if len(follow) != 2 || follow[0].ID >= follow[1].ID {
		t.Errorf("follow after first = %+v, want two entries oldest first", follow)
	}
}
