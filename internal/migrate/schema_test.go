package migrate_test

import (
	"context"
	"testing"

	"github.com/rlctl/rlctl/internal/store"
)

// rlFunctions is a schemaOf query: every rl_ function, by signature, with
// its definition.
const rlFunctions = `select 'function ' || p.oid::regprocedure::text, pg_get_functiondef(p.oid)
	from pg_proc p where p.pronamespace = 'public'::regnamespace and p.proname like 'rl\_%'`

// schemaOf reads a query of (name, definition) rows into a map: the part of
// the schema a rollback test compares before a migration and after it is
// rolled back.
func schemaOf(t *testing.T, ctx context.Context, s *store.Store, query string) map[string]string {
	t.Helper()
	rows, err := s.Pool().Query(ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		out[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// definitionsTable is a schemaOf query: rl_definitions' constraints and
// columns (type and default), the part of the schema a migration of a
// definition field changes.
const definitionsTable = `select 'constraint ' || conname, pg_get_constraintdef(oid) from pg_constraint where conrelid = 'rl_definitions'::regclass
	union all
	select 'column ' || column_name, data_type || ' ' || coalesce(column_default, '') from information_schema.columns where table_name = 'rl_definitions'`

// countDefinitions counts the rows of rl_definitions: a rollback keeps them.
func countDefinitions(t *testing.T, ctx context.Context, s *store.Store) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(ctx, `select count(*) from rl_definitions`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
