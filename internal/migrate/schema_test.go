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
