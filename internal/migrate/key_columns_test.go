package migrate_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/store"
)

// TestMigration024KeyColumns: counters written before 024 are backfilled
// with the parts the old parsers read and are still listed and reset by
// caller, target and definition after it; a replica of the version before
// still counting through rl_take_012 writes counters the selectors find;
// rolling 024 back leaves exactly 023's functions, indexes and columns,
// the counters found as before; 024 applies again.
func TestMigration024KeyColumns(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := storeAt(t, 23)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions+`
			union all
			select 'index ' || indexname, indexdef from pg_indexes where schemaname = 'public' and tablename = 'rl_counters'
			union all
			select 'column ' || column_name, data_type || ' ' || coalesce(collation_name, '') from information_schema.columns
				where table_schema = 'public' and table_name = 'rl_counters'
			union all
			select 'trigger ' || tgname, pg_get_triggerdef(oid) from pg_trigger where tgrelid = 'rl_counters'::regclass and not tgisinternal`)
	}
	now := time.Now()
	win := now.Unix() / 60
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests)
			values ('caller:group:dev:60', 'caller', 'group', 'dev', 60, 10);
		insert into rl_memberships (subject_type, subject, groups) values ('user', 'alice', array['dev'])`)
	execSQL(t, s, `insert into rl_counters (key, window_index, count, expires_at) values
		('c|60|user:alice', $1, 1, $2),
		('ct.tb|60|user:alice|mcp_server:mcpgw', 0, 2, $2),
		('s|caller_target:group:dev:60|user:alice|a2a_agent:/booking', $1, 3, $2),
		('t.sw|target:mcp_server:mcpgw:60', $1, 4, $2),
		('t|target:server_group:fragile:60|mcpgw', $1, 5, $2),
		('p|caller_target:group:g:60|team:acme|mcp_server:mcpgw', $1, 6, $2),
		('ct|60|team:acme|route:high', $1, 7, $2),
		('c|60|ip:2001:db8:1:2::/64', $1, 8, $2),
		('af|rlapi|300|ip:192.0.2.1', $1, 9, $2)`, win, now.Add(time.Hour))
	list := func(sel store.CounterSelector) []string {
		t.Helper()
		rows, err := s.CountersOf(ctx, sel, now, 0)
		if err != nil {
			t.Fatalf("counters of %+v: %v", sel, err)
		}
		var keys []string
		for _, r := range rows {
			keys = append(keys, r.Key)
		}
		return keys
	}
	selectors := []struct {
		sel  store.CounterSelector
		want []string
	}{
		{store.CounterSelector{Caller: "user:alice"}, []string{"c|60|user:alice", "ct.tb|60|user:alice|mcp_server:mcpgw",
			"s|caller_target:group:dev:60|user:alice|a2a_agent:/booking"}},
		{store.CounterSelector{Caller: "team:acme"}, []string{"ct|60|team:acme|route:high", "p|caller_target:group:g:60|team:acme|mcp_server:mcpgw"}},
		{store.CounterSelector{Caller: "ip:2001:db8:1:2::/64"}, []string{"c|60|ip:2001:db8:1:2::/64"}},
		{store.CounterSelector{Target: "mcp_server:mcpgw"}, []string{"ct.tb|60|user:alice|mcp_server:mcpgw",
			"p|caller_target:group:g:60|team:acme|mcp_server:mcpgw", "t.sw|target:mcp_server:mcpgw:60", "t|target:server_group:fragile:60|mcpgw"}},
		{store.CounterSelector{Definition: "target:server_group:fragile:60"}, []string{"t|target:server_group:fragile:60|mcpgw"}},
		{store.CounterSelector{Definition: "caller_target:group:dev:60"}, []string{"s|caller_target:group:dev:60|user:alice|a2a_agent:/booking"}},
		// dev:60 is checked against alice's shared 60 s bucket.
		{store.CounterSelector{Definition: "caller:group:dev:60"}, []string{"c|60|user:alice"}},
	}
	// listParsed is what a binary of 023 lists: the parsers' reading of
	// every key (the definition's own keys only, without shared buckets).
	listParsed := func(sel store.CounterSelector) []string {
		t.Helper()
		var keys []string
		if err := s.Pool().QueryRow(ctx, `select coalesce(array_agg(key order by key collate "C"), '{}') from rl_counters
			where expires_at > $4 and count > 0 and (rl_counter_caller(key) = $1 or rl_counter_target(key) = $2 or rl_counter_definition(key) = $3)`,
			sel.Caller, sel.Target, sel.Definition, now).Scan(&keys); err != nil {
			t.Fatalf("counters of %+v by the parsers: %v", sel, err)
		}
		return keys
	}
	check := func(when string, list func(store.CounterSelector) []string) {
		t.Helper()
		for _, tt := range selectors {
			if list == nil && tt.sel.Definition == "caller:group:dev:60" {
				continue // a shared bucket: not the definition's own key
			}
			lister := list
			if lister == nil {
				lister = listParsed
			}
			want := slices.Clone(tt.want)
			slices.Sort(want) // byte order, as the selectors list
			if got := lister(tt.sel); !slices.Equal(got, want) {
				t.Errorf("%s: %+v lists %q, want %q", when, tt.sel, got, want)
			}
		}
	}
	at23 := schema()
	check("at 023", nil)

	// The store of this binary reads the definition columns of later
	// migrations too (the selectors resolve definitions), so what is
	// checked through it is checked at the latest schema, 024 included.
	latest := func() error {
		_, err := migrate.Up(ctx, s.Pool())
		return err
	}
	if err := latest(); err != nil {
		t.Fatal(err)
	}
	check("at 024, rows written before it", list)
	// The backfill holds what the parsers read, and nothing for a key
	// without parts.
	var disagree []string
	if err := s.Pool().QueryRow(ctx, `select coalesce(array_agg(key order by key), '{}') from rl_counters
		where caller is distinct from rl_counter_caller(key) or target is distinct from rl_counter_target(key)
			or definition is distinct from rl_counter_definition(key)`).Scan(&disagree); err != nil {
		t.Fatal(err)
	}
	if len(disagree) > 0 {
		t.Errorf("at 024 the columns disagree with the parsers on %q", disagree)
	}
	var caller, target, definition *string
	if err := s.Pool().QueryRow(ctx, `select caller, target, definition from rl_counters where key = 'af|rlapi|300|ip:192.0.2.1'`).Scan(&caller, &target, &definition); err != nil {
		t.Fatal(err)
	}
	if caller != nil || target != nil || definition != nil {
		t.Errorf("a failed-credential counter has parts %v %v %v, want none", caller, target, definition)
	}
	// The index scans the selectors use see the backfilled rows: a reset
	// by caller resets what was written before the migration.
	var reset []string
	if err := s.InTx(ctx, func(q *store.Queries) error {
		rows, err := q.ResetCounters(ctx, store.CounterSelector{Caller: "team:acme"}, now)
		for _, r := range rows {
			reset = append(reset, r.Key)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if want := selectors[1].want; !slices.Equal(reset, want) {
		t.Errorf("at 024 reset by team:acme reset %q, want %q", reset, want)
	}
	if got := list(store.CounterSelector{Caller: "team:acme"}); len(got) != 0 {
		t.Errorf("after the reset team:acme lists %q", got)
	}

	// A replica of the version before counts through rl_take_012: its
	// new counter gets its parts from the key.
	var allowed bool
	if err := s.Pool().QueryRow(ctx, `select (rl_take_012(array[1], array['ct|60|user:carol|mcp_server:mcpgw'], array[$1]::bigint[],
			array[10]::bigint[], array[true], array[$2::timestamptz], array[1]::bigint[], array[true], array['fixed_window'],
			array[60e9]::bigint[], array[0]::bigint[], array[0]::bigint[])).allowed[1]`, win, now.Add(time.Hour)).Scan(&allowed); err != nil || !allowed {
		t.Fatalf("rl_take_012 at 024: allowed %v, %v", allowed, err)
	}
	if got := list(store.CounterSelector{Caller: "user:carol"}); !slices.Equal(got, []string{"ct|60|user:carol|mcp_server:mcpgw"}) {
		t.Errorf("at 024 a counter rl_take_012 wrote is listed by its caller as %q", got)
	}
	if got := list(store.CounterSelector{Target: "mcp_server:mcpgw"}); !slices.Contains(got, "ct|60|user:carol|mcp_server:mcpgw") {
		t.Errorf("at 024 a counter rl_take_012 wrote is not listed by its target: %q", got)
	}
	execSQL(t, s, `update rl_counters set count = 7 where caller = 'team:acme'`)
	selectors[3].want = append(selectors[3].want, "ct|60|user:carol|mcp_server:mcpgw")
	selectors = append(selectors, struct {
		sel  store.CounterSelector
		want []string
	}{store.CounterSelector{Caller: "user:carol"}, []string{"ct|60|user:carol|mcp_server:mcpgw"}})
	check("at 024", list)

	if err := migrate.To(ctx, s.Pool(), 23); err != nil {
		t.Fatalf("roll back 024: %v", err)
	}
	back := schema()
	for name, def := range at23 {
		if back[name] != def {
			t.Errorf("after rolling back 024, %s is\n%s\nwant (as at 023)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at23[name]; !ok {
			t.Errorf("after rolling back 024, %s is left", name)
		}
	}
	check("after rolling back 024", nil)
	if err := latest(); err != nil {
		t.Fatalf("apply 024 again: %v", err)
	}
	check("at 024 again", list)
}
