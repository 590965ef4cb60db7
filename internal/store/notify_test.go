package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestChangeNotificationsNameTheRows: every write to definitions,
// memberships and admins notifies rlctl_changes with the ids of the rows
// its statement wrote; a statement of more than 64 rows, or a TRUNCATE,
// names the table only; a statement that wrote nothing sends nothing.
func TestChangeNotificationsNameTheRows(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := s.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Conn().Close(context.Background()); conn.Release() }()
	if _, err := conn.Exec(ctx, "listen "+store.ChangeChannel); err != nil {
		t.Fatal(err)
	}
	expect := func(what string, want store.Change) {
		t.Helper()
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("%s: no notification: %v", what, err)
		}
		got := store.ParseChange(n.Payload)
		slices.Sort(got.IDs)
		if got.Table != want.Table || got.All != want.All || !slices.Equal(got.IDs, want.IDs) {
			t.Errorf("%s: notification %q = %+v, want %+v", what, n.Payload, got, want)
		}
	}
	tx := func(fn func(q *store.Queries) error) {
		t.Helper()
		if err := s.InTx(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(table string, ids ...string) store.Change { return store.Change{Table: table, IDs: ids} }

	g := callerGroup("g", 60, 10)
	tx(func(q *store.Queries) error { _, err := q.PutDefinition(ctx, g, store.Write{}); return err })
	expect("create a definition", ids(store.TableDefinitions, g.Key()))
	tx(func(q *store.Queries) error {
		_, _, err := q.SetDefinitionEnabled(ctx, g.Key(), false, store.Write{})
		return err
	})
	expect("disable it", ids(store.TableDefinitions, g.Key()))
	tx(func(q *store.Queries) error { _, err := q.DeleteDefinition(ctx, g.Key(), store.Write{}); return err })
	expect("delete it", ids(store.TableDefinitions, g.Key()))

	alice := ratelimit.Membership{SubjectType: "user", Subject: "alice: the first", Groups: []string{"g"}}
	tx(func(q *store.Queries) error { _, err := q.PutMembership(ctx, alice, store.Write{}); return err })
	expect("create a membership", ids(store.TableMemberships, "user:alice: the first"))
	alice.Groups = []string{"h"}
	tx(func(q *store.Queries) error { _, err := q.PutMembership(ctx, alice, store.Write{}); return err })
	expect("update it", ids(store.TableMemberships, "user:alice: the first"))
	tx(func(q *store.Queries) error {
		_, err := q.DeleteMembership(ctx, "user", "alice: the first", store.Write{})
		return err
	})
	expect("delete it", ids(store.TableMemberships, "user:alice: the first"))

	tx(func(q *store.Queries) error {
		_, _, err := q.PutAdmin(ctx, ratelimit.Admin{SubjectType: "client", Subject: "ops"}, "test")
		return err
	})
	expect("grant an admin", ids(store.TableAdmins, "client:ops"))
	tx(func(q *store.Queries) error { _, err := q.DeleteAdmin(ctx, "client", "ops"); return err })
	expect("revoke it", ids(store.TableAdmins, "client:ops"))

	// One statement of 64 rows names them; of 65, the table.
	now := time.Now()
	many := func(prefix string, n int) []ratelimit.Membership {
		out := make([]ratelimit.Membership, n)
		for i := range out {
			out[i] = ratelimit.Membership{SubjectType: "client", Subject: fmt.Sprintf("%s%03d", prefix, i), Groups: []string{"g"},
				CreatedAt: &now, UpdatedAt: &now, Version: 1}
		}
		return out
	}
	var want []string
	for _, m := range many("a", 64) {
		want = append(want, m.Key())
	}
	tx(func(q *store.Queries) error { return q.InsertMemberships(ctx, many("a", 64)) })
	expect("64 memberships in one COPY", ids(store.TableMemberships, want...))
	tx(func(q *store.Queries) error { return q.InsertMemberships(ctx, many("b", 65)) })
	expect("65 memberships in one COPY", store.Change{Table: store.TableMemberships, All: true})

	// A statement that wrote nothing sends nothing: the next notification
	// is the one after it.
	if _, err := s.Pool().Exec(ctx, `update rl_memberships set groups = groups where false`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `truncate rl_admins`); err != nil {
		t.Fatal(err)
	}
	expect("a truncate, after an update of no row", store.Change{Table: store.TableAdmins, All: true})
}

func TestParseChange(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		payload string
		want    store.Change
	}{
		{`{"table" : "rl_admins", "ids" : ["user:a"]}`, store.Change{Table: store.TableAdmins, IDs: []string{"user:a"}}},
		{`{"table" : "rl_memberships"}`, store.Change{Table: store.TableMemberships, All: true}},
		{`rl_definitions`, store.Change{Table: store.TableDefinitions, All: true}},
		{`{"table": "rl_other", "ids": ["x"]}`, store.Change{All: true}},
		{`{not json`, store.Change{All: true}},
		{``, store.Change{All: true}},
	} {
		got := store.ParseChange(c.payload)
		if got.Table != c.want.Table || got.All != c.want.All || !slices.Equal(got.IDs, c.want.IDs) {
			t.Errorf("ParseChange(%q) = %+v, want %+v", c.payload, got, c.want)
		}
	}
}
