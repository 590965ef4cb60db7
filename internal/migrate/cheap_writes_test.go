package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/store"
)

// firstTakesHOT runs one take (rl_take_012, three fixed-window gates) on
// each of 500 of 2,000 counters just inserted, in one transaction, and
// reports how many row updates there were and how many of them were HOT
// (stayed on their page, no index entries).
func firstTakesHOT(t *testing.T, s *store.Store) (updated, hot int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tx, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing to keep
	if _, err := tx.Exec(ctx, `insert into rl_counters (key, window_index, count, expires_at)
		select k, 1, 0, now() + interval '1 hour' from generate_series(1, 2000) i,
			lateral (values ('c|3600|user:u' || i), ('ct|3600|user:u' || i || '|mcp_server:s' || i),
				('t|target:server_group:g:3600|s' || i)) v(k)`); err != nil {
		t.Fatal(err)
	}
	var allowed int
	if err := tx.QueryRow(ctx, `select count(*) filter (where r.allowed[1]) from generate_series(4, 2000, 4) i,
		lateral rl_take_012(array[1,1,1], array['c|3600|user:u' || i, 'ct|3600|user:u' || i || '|mcp_server:s' || i, 't|target:server_group:g:3600|s' || i],
			array[1,1,1]::bigint[], array[10,10,10]::bigint[], array[true,true,true], array[now() + interval '1 hour', now() + interval '1 hour', now() + interval '1 hour'],
			array[1]::bigint[], array[true], array['fixed_window','fixed_window','fixed_window'],
			array[3600e9,3600e9,3600e9]::bigint[], array[0,0,0]::bigint[], array[0]::bigint[]) r`).Scan(&allowed); err != nil {
		t.Fatal(err)
	}
	if allowed != 500 {
		t.Fatalf("%d of 500 takes allowed", allowed)
	}
	if err := tx.QueryRow(ctx, `select pg_stat_get_xact_tuples_updated('rl_counters'::regclass),
		pg_stat_get_xact_tuples_hot_updated('rl_counters'::regclass)`).Scan(&updated, &hot); err != nil {
		t.Fatal(err)
	}
	return updated, hot
}

// TestMigration020CheapWritesAndRollsBack: at 020 the first take of
// counters just inserted is a HOT update (at 019 the pages were full and
// it was not), the key-part indexes find the same counters by caller,
// target and definition as at 019, and rolling 020 back leaves exactly
// 019's functions, indexes and table options; 020 applies again.
func TestMigration020CheapWritesAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := storeAt(t, 19)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions+`
			union all
			select 'index ' || indexname, indexdef from pg_indexes where schemaname = 'public' and tablename = 'rl_counters'
			union all
			select 'options', coalesce(array_to_string(reloptions, ','), '') from pg_class where oid = 'rl_counters'::regclass`)
	}
	execSQL(t, s, `insert into rl_counters (key, window_index, count, expires_at) values
		('c|60|user:alice', 1, 1, now() + interval '1 hour'),
		('ct.tb|60|user:alice|mcp_server:mcpgw', 0, 2, now() + interval '1 hour'),
		('s|caller_target:group:dev:60|user:alice|a2a_agent:/booking', 1, 3, now() + interval '1 hour'),
		('t.sw|target:mcp_server:mcpgw:60', 1, 4, now() + interval '1 hour'),
		('t|target:server_group:fragile:60|mcpgw', 1, 5, now() + interval '1 hour'),
		('p|caller_target:group:g:60|team:acme|mcp_server:mcpgw', 1, 6, now() + interval '1 hour'),
		('ct|60|team:acme|route:high', 1, 7, now() + interval '1 hour'),
		('c|60|ip:2001:db8:1:2::/64', 1, 8, now() + interval '1 hour')`)
	// What the counters API finds through each index.
	found := func() string {
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
		if err := tx.QueryRow(ctx, `select string_agg(w || ' ' || v || ': ' || keys, '; ' order by w, v) from (
			select 'caller' w, rl_counter_caller(key) v, string_agg(key || ' ' || rl_counter_kind(key) || ' ' || rl_counter_window(key), ', ' order by key) keys
				from rl_counters where rl_counter_caller(key) in ('user:alice', 'team:acme', 'ip:2001:db8:1:2::/64') group by 2
			union all
			select 'target', rl_counter_target(key), string_agg(key, ', ' order by key)
				from rl_counters where rl_counter_target(key) in ('mcp_server:mcpgw', 'a2a_agent:/booking', 'route:high') group by 2
			union all
			select 'definition', rl_counter_definition(key), string_agg(key, ', ' order by key)
				from rl_counters where rl_counter_definition(key) in ('target:mcp_server:mcpgw:60', 'target:server_group:fragile:60',
					'caller_target:group:dev:60', 'caller_target:group:g:60') group by 2) s`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	at19, parts19 := schema(), found()
	if parts19 == "" {
		t.Fatal("at 019 the indexes find nothing")
	}
	t.Logf("at 019 the indexes find %s", parts19)
	upd, hot := firstTakesHOT(t, s)
	t.Logf("at 019: %d of %d first takes' row updates HOT", hot, upd)
	if upd != 1500 {
		t.Fatalf("at 019: %d row updates, want 1500", upd)
	}

	if err := migrate.To(ctx, s.Pool(), 20); err != nil {
		t.Fatal(err)
	}
	if got := found(); got != parts19 {
		t.Errorf("at 020 the indexes find\n%s\nwant (as at 019)\n%s", got, parts19)
	}
	if upd, hot := firstTakesHOT(t, s); upd != 1500 || hot != upd {
		t.Errorf("at 020: %d of %d first takes' row updates HOT, want all of 1500", hot, upd)
	}
	var opts string
	if err := s.Pool().QueryRow(ctx, `select array_to_string(reloptions, ',') from pg_class where oid = 'rl_counters'::regclass`).Scan(&opts); err != nil || opts != "fillfactor=70" {
		t.Errorf("rl_counters options %q (%v), want fillfactor=70", opts, err)
	}

	if err := migrate.To(ctx, s.Pool(), 19); err != nil {
		t.Fatalf("roll back 020: %v", err)
	}
	back := schema()
	for name, def := range at19 {
		if back[name] != def {
			t.Errorf("after rolling back 020, %s is\n%s\nwant (as at 019)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at19[name]; !ok {
			t.Errorf("after rolling back 020, %s is left", name)
		}
	}
	if got := found(); got != parts19 {
		t.Errorf("after rolling back 020 the indexes find\n%s\nwant\n%s", got, parts19)
	}
	if err := migrate.To(ctx, s.Pool(), 20); err != nil {
		t.Fatalf("apply 020 again: %v", err)
	}
}
