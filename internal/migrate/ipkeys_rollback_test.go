package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
)

// TestMigration011ReadsIPCallersAndRollsBack: a counter of an anonymous
// caller written before 011 (ip:<address>) has no parts at 010; 011 gives
// it its caller, target, kind and window, in the rebuilt indexes too (an
// index scan finds it); rolling 011 back leaves exactly 010's functions
// and indexes.
func TestMigration011ReadsIPCallersAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := storeAt(t, 10)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions+`
			union all
			select 'index ' || indexname, indexdef from pg_indexes where schemaname = 'public' and tablename = 'rl_counters'`)
	}
	execSQL(t, s, `insert into rl_counters (key, window_index, count, expires_at) values
		('ct|60|ip:2001:db8:1:2::/64|mcp_server:mcpgw', 1, 3, now() + interval '1 hour'),
		('c.tb|60|ip:203.0.113.7', 1, 3, now() + interval '1 hour')`)
	parts := func() []string {
		t.Helper()
		// Through the indexes, as the selectors read them.
		tx, err := s.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // read only
		if _, err := tx.Exec(ctx, `set local enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range []string{
			`select coalesce(string_agg(key || ' window ' || rl_counter_window(key) || ' kind ' || rl_counter_kind(key), ', ' order by key), '')
				from rl_counters where rl_counter_caller(key) in ('ip:2001:db8:1:2::/64', 'ip:203.0.113.7')`,
			`select coalesce(string_agg(key, ', '), '') from rl_counters where rl_counter_target(key) = 'mcp_server:mcpgw'`,
		} {
			var got string
			if err := tx.QueryRow(ctx, q).Scan(&got); err != nil {
				t.Fatal(err)
			}
			out = append(out, got)
		}
		return out
	}
	at10 := schema()
	if got := parts(); got[0] != "" || got[1] != "" {
		t.Fatalf("at 010 the ip callers' counters already have parts: %q", got)
	}
	if err := migrate.To(ctx, s.Pool(), 11); err != nil {
		t.Fatal(err)
	}
	got := parts()
	if want := "c.tb|60|ip:203.0.113.7 window 60 kind c, ct|60|ip:2001:db8:1:2::/64|mcp_server:mcpgw window 60 kind ct"; got[0] != want {
		t.Errorf("at 011, by caller: %q, want %q", got[0], want)
	}
	if want := "ct|60|ip:2001:db8:1:2::/64|mcp_server:mcpgw"; got[1] != want {
		t.Errorf("at 011, by target: %q, want %q", got[1], want)
	}
	if err := migrate.To(ctx, s.Pool(), 10); err != nil {
		t.Fatalf("roll back 011: %v", err)
	}
	back := schema()
	for name, def := range at10 {
		if back[name] != def {
			t.Errorf("after rolling back 011, %s is\n%s\nwant (as at 010)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at10[name]; !ok {
			t.Errorf("after rolling back 011, %s is left", name)
		}
	}
	if got := parts(); got[0] != "" || got[1] != "" {
		t.Errorf("after rolling back 011, the indexes still hold 011's parts: %q", got)
	}
	if err := migrate.To(ctx, s.Pool(), 11); err != nil {
		t.Fatalf("apply 011 again: %v", err)
	}
}
