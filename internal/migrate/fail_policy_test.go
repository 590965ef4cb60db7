package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestMigration025FailPolicyAndRollsBack: at 025 a definition stored
// fail_closed before reads fail_policy closed and every other one none
// (the enforcer's default), a sentinel's fail_closed is left alone; open,
// closed and degrade are stored, anything else is refused, and so are a
// fail policy on a sentinel and a fail_closed out of step with it; a
// replica of the version before, which writes fail_closed alone, keeps the
// two in step; rolling 025 back leaves exactly 024's columns, constraints,
// triggers and functions and keeps every definition; 025 applies again.
func TestMigration025FailPolicyAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := storeAt(t, 24)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions+`
			union all
			`+definitionsTable+`
			union all
			select 'trigger ' || tgname, pg_get_triggerdef(oid) from pg_trigger where tgrelid = 'rl_definitions'::regclass and not tgisinternal`)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, fail_closed, updated_by)
		values ('target:mcp_server:strict:60', 'target', 'mcp_server', 'strict', 60, 100, true, 't'),
		       ('target:mcp_server:lax:60', 'target', 'mcp_server', 'lax', 60, 100, false, 't');
		update rl_definitions set fail_closed = true where id = 'quarantine:group:quarantine-targets:1'`)
	at24 := schema()
	rows24 := countDefinitions(t, ctx, s)
	if err := migrate.To(ctx, s.Pool(), 25); err != nil {
		t.Fatal(err)
	}
	read := func(id string) (policy string, failClosed bool) {
		t.Helper()
		if err := s.Pool().QueryRow(ctx, `select fail_policy, fail_closed from rl_definitions where id = $1`, id).Scan(&policy, &failClosed); err != nil {
			t.Fatalf("read %s: %v", id, err)
		}
		return policy, failClosed
	}
	for id, want := range map[string]string{
		"target:mcp_server:strict:60":           "closed",
		"target:mcp_server:lax:60":              "",
		"quarantine:group:quarantine-targets:1": "",
	} {
		if got, _ := read(id); got != want {
			t.Errorf("%s, written before 025, reads fail_policy %q, want %q", id, got, want)
		}
	}
	if _, closed := read("quarantine:group:quarantine-targets:1"); !closed {
		t.Errorf("the sentinel's fail_closed was changed by 025")
	}
	// And as the API answers it: the store reads the row as a Definition.
	// It reads the definition columns of later migrations too, so it reads
	// at the latest schema, and the test goes on at 025.
	if _, err := migrate.Up(ctx, s.Pool()); err != nil {
		t.Fatal(err)
	}
	if err := s.ReadTx(ctx, func(q *store.Queries) error {
		d, err := q.GetDefinition(ctx, "target:mcp_server:strict:60")
		if err == nil && (d.FailPolicy != ratelimit.FailPolicyClosed || !d.FailClosed || d.FailPolicyOf() != ratelimit.FailPolicyClosed) {
			t.Errorf("the store reads a fail_closed definition from before 025 as fail_policy %q fail_closed %t, want closed and true", d.FailPolicy, d.FailClosed)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := migrate.To(ctx, s.Pool(), 25); err != nil {
		t.Fatal(err)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, fail_policy, fail_closed, updated_by)
		values ('target:mcp_server:open:60', 'target', 'mcp_server', 'open', 60, 100, 'open', false, 't'),
		       ('target:mcp_server:closed:60', 'target', 'mcp_server', 'closed', 60, 100, 'closed', true, 't'),
		       ('target:mcp_server:degrade:60', 'target', 'mcp_server', 'degrade', 60, 100, 'degrade', false, 't')`)
	for name, sql := range map[string]string{
		"an unknown fail policy": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, fail_policy, updated_by)
			values ('target:mcp_server:typo:60', 'target', 'mcp_server', 'typo', 60, 100, 'deny', 't')`,
		"degrade with fail_closed":    `update rl_definitions set fail_policy = 'degrade', fail_closed = true where id = 'target:mcp_server:strict:60'`,
		"closed without fail_closed":  `update rl_definitions set fail_policy = 'closed', fail_closed = false where id = 'target:mcp_server:lax:60'`,
		"a fail policy on a sentinel": `update rl_definitions set fail_policy = 'open' where axis = 'quarantine'`,
	} {
		if _, err := s.Pool().Exec(ctx, sql); err == nil {
			t.Errorf("%s was stored", name)
		}
	}

	// A replica of the version before 025 writes fail_closed and no
	// fail_policy: what it writes is what both versions read.
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, fail_closed, updated_by)
		values ('target:mcp_server:older:60', 'target', 'mcp_server', 'older', 60, 100, true, 't')`)
	execSQL(t, s, `update rl_definitions set fail_closed = false where id = 'target:mcp_server:closed:60'`)
	execSQL(t, s, `update rl_definitions set fail_closed = true where id = 'target:mcp_server:degrade:60'`)
	execSQL(t, s, `update rl_definitions set max_requests = 50, fail_closed = false where id = 'target:mcp_server:open:60'`)
	for id, want := range map[string]string{
		"target:mcp_server:older:60":   "closed",
		"target:mcp_server:closed:60":  "",
		"target:mcp_server:degrade:60": "closed",
		"target:mcp_server:open:60":    "open",
	} {
		if got, closed := read(id); got != want || closed != (want == "closed") {
			t.Errorf("%s after an older replica's write: fail_policy %q fail_closed %t, want %q", id, got, closed, want)
		}
	}

	if err := migrate.To(ctx, s.Pool(), 24); err != nil {
		t.Fatalf("roll back 025: %v", err)
	}
	back := schema()
	for name, def := range at24 {
		if back[name] != def {
			t.Errorf("after rolling back 025, %s is\n%s\nwant (as at 024)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at24[name]; !ok {
			t.Errorf("after rolling back 025, %s is left", name)
		}
	}
	if got := countDefinitions(t, ctx, s); got != rows24+4 {
		t.Errorf("after rolling back 025, %d definitions, want %d", got, rows24+4)
	}
	var closed bool
	if err := s.Pool().QueryRow(ctx, `select fail_closed from rl_definitions where id = 'target:mcp_server:strict:60'`).Scan(&closed); err != nil || !closed {
		t.Errorf("after rolling back 025, the fail_closed definition reads fail_closed %t (%v)", closed, err)
	}
	if err := migrate.To(ctx, s.Pool(), 25); err != nil {
		t.Fatalf("apply 025 again: %v", err)
	}
}
