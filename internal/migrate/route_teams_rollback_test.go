package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
)

// TestMigration018RouteTeamsAndRollsBack: at 018 a route whose only limit
// is per team is stored, a team burst without a token bucket is refused,
// and a tier's team counter (ct|<window>|team:<name>|route:<tier>) has its
// caller, target, kind and window through the rebuilt indexes; rolling
// 018 back leaves exactly 017's functions, indexes, constraints and
// columns, and 018 applies again.
func TestMigration018RouteTeamsAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := storeAt(t, 17)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions+`
			union all
			select 'index ' || indexname, indexdef from pg_indexes where schemaname = 'public' and tablename = 'rl_counters'
			union all
			select 'constraint ' || conname, pg_get_constraintdef(oid) from pg_constraint where conrelid = 'rl_definitions'::regclass
			union all
			select 'column ' || column_name, data_type from information_schema.columns where table_name = 'rl_definitions'`)
	}
	execSQL(t, s, `insert into rl_counters (key, window_index, count, expires_at) values
		('ct.tb|60|team:acme-corp|route:high', 1, 3, now() + interval '1 hour')`)
	parts := func() string {
		t.Helper()
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // read only
		if _, err := tx.Exec(ctx, `set local enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := tx.QueryRow(ctx, `select coalesce(string_agg(key || ' window ' || rl_counter_window(key) || ' kind ' || rl_counter_kind(key)
				|| ' target ' || rl_counter_target(key), ', '), '')
			from rl_counters where rl_counter_caller(key) = 'team:acme-corp'`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	at17 := schema()
	if got := parts(); got != "" {
		t.Fatalf("at 017 the team counter already has parts: %q", got)
	}
	if err := migrate.To(ctx, s.Pool(), 18); err != nil {
		t.Fatal(err)
	}
	if want := "ct.tb|60|team:acme-corp|route:high window 60 kind ct target route:high"; parts() != want {
		t.Errorf("at 018, by caller: %q, want %q", parts(), want)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, paths, team_max_requests, updated_by)
		values ('target:route:teams:60', 'target', 'route', 'teams', 60, array['/x/*'], 5, 't')`)
	if _, err := s.Pool().Exec(ctx, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, paths, team_max_requests, team_burst, updated_by)
		values ('target:route:burst:60', 'target', 'route', 'burst', 60, array['/y/*'], 5, 6, 't')`); err == nil {
		t.Error("a team burst on a fixed window was stored")
	}
	if err := migrate.To(ctx, s.Pool(), 17); err != nil {
		t.Fatalf("roll back 018: %v", err)
	}
	back := schema()
	for name, def := range at17 {
		if back[name] != def {
			t.Errorf("after rolling back 018, %s is\n%s\nwant (as at 017)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at17[name]; !ok {
			t.Errorf("after rolling back 018, %s is left", name)
		}
	}
	if got := parts(); got != "" {
		t.Errorf("after rolling back 018, the indexes still hold 018's parts: %q", got)
	}
	if err := migrate.To(ctx, s.Pool(), 18); err != nil {
		t.Fatalf("apply 018 again: %v", err)
	}
}
