package migrate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
)

// TestMigration015WidensAndRollsBack: 015 admits descriptor definitions
// (an unlimited one, and a deny-all one of max_requests 0) and refuses
// descriptor fields elsewhere; rolling it back deletes them and leaves
// exactly 014's constraints and columns.
func TestMigration015WidensAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := storeAt(t, 14)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, `select 'constraint ' || conname, pg_get_constraintdef(oid) from pg_constraint
				where conrelid = 'rl_definitions'::regclass
			union all
			select 'column ' || column_name, data_type from information_schema.columns where table_name = 'rl_definitions'
			union all
			select 'table ' || tablename, '' from pg_tables where schemaname = 'public'`)
	}
	at14 := schema()
	if err := migrate.To(ctx, s.Pool(), 15); err != nil {
		t.Fatal(err)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, descriptor) values
		('target:descriptor:rl/k:1', 'target', 'descriptor', 'rl/k', 1, null, '{"unlimited": true}'),
		('target:descriptor:rl/ip=50.0.0.5:1', 'target', 'descriptor', 'rl/ip=50.0.0.5', 1, 0, '{}'),
		('target:descriptor:rl/n:60', 'target', 'descriptor', 'rl/n', 60, 10, '{}')`)
	for _, bad := range []string{
		// no rate and not unlimited
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, descriptor) values ('target:descriptor:rl/x:1', 'target', 'descriptor', 'rl/x', 1, '{}')`,
		// descriptor fields on a server
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, descriptor) values ('target:mcp_server:s:1', 'target', 'mcp_server', 's', 1, 5, '{}')`,
		// max_requests 0 on a server
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests) values ('target:mcp_server:s:1', 'target', 'mcp_server', 's', 1, 0)`,
		// max_requests 0 on a token bucket
		`insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, descriptor, algorithm) values ('target:descriptor:rl/y:1', 'target', 'descriptor', 'rl/y', 1, 0, '{}', 'token_bucket')`,
	} {
		if _, err := s.Pool().Exec(ctx, bad); err == nil || !strings.Contains(err.Error(), "violates check constraint") {
			t.Errorf("%s: %v, want a check violation", bad, err)
		}
	}
	if err := migrate.To(ctx, s.Pool(), 14); err != nil {
		t.Fatalf("roll back 015: %v", err)
	}
	back := schema()
	for name, def := range at14 {
		if back[name] != def {
			t.Errorf("after rolling back 015, %s is\n%s\nwant (as at 014)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at14[name]; !ok {
			t.Errorf("after rolling back 015, %s is left", name)
		}
	}
	var n int
	if err := s.Pool().QueryRow(ctx, `select count(*) from rl_definitions where entity_type = 'descriptor'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d descriptor definitions after the rollback (%v), want 0", n, err)
	}
	if err := migrate.To(ctx, s.Pool(), 15); err != nil {
		t.Fatalf("015 again: %v", err)
	}
}
