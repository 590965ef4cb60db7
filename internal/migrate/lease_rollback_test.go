package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
)

// TestMigration021LeaseAndRollsBack: at 021 every definition stored
// before reads lease auto, never and always are stored, any other value
// is refused, and so is a lease other than auto on a quarantine sentinel
// or an exempt route; rolling 021 back leaves exactly 020's columns and
// constraints and keeps every definition (they read as auto, as before
// 021), and 021 applies again.
func TestMigration021LeaseAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := storeAt(t, 20)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, definitionsTable)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, updated_by)
		values ('target:mcp_server:old:60', 'target', 'mcp_server', 'old', 60, 100, 't')`)
	at20 := schema()
	rows20 := countDefinitions(t, ctx, s)
	if err := migrate.To(ctx, s.Pool(), 21); err != nil {
		t.Fatal(err)
	}
	var lease string
	if err := s.Pool().QueryRow(ctx, `select lease from rl_definitions where id = 'target:mcp_server:old:60'`).Scan(&lease); err != nil || lease != "auto" {
		t.Fatalf("a definition from before 021 reads lease %q (%v), want auto", lease, err)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, lease, updated_by)
		values ('target:mcp_server:billing:60', 'target', 'mcp_server', 'billing', 60, 100, 'never', 't'),
		       ('target:mcp_server:hot:60', 'target', 'mcp_server', 'hot', 60, 100000, 'always', 't')`)
	for name, sql := range map[string]string{
		"an unknown lease": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, lease, updated_by)
			values ('target:mcp_server:typo:60', 'target', 'mcp_server', 'typo', 60, 100, 'sometimes', 't')`,
		"lease always on an exempt route": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, paths, exempt, lease, updated_by)
			values ('target:route:public:60', 'target', 'route', 'public', 60, array['/docs'], true, 'always', 't')`,
		"lease never on a sentinel": `update rl_definitions set lease = 'never' where axis = 'quarantine'`,
	} {
		if _, err := s.Pool().Exec(ctx, sql); err == nil {
			t.Errorf("%s was stored", name)
		}
	}
	if err := migrate.To(ctx, s.Pool(), 20); err != nil {
		t.Fatalf("roll back 021: %v", err)
	}
	back := schema()
	for name, def := range at20 {
		if back[name] != def {
			t.Errorf("after rolling back 021, %s is\n%s\nwant (as at 020)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at20[name]; !ok {
			t.Errorf("after rolling back 021, %s is left", name)
		}
	}
	if got := countDefinitions(t, ctx, s); got != rows20+2 {
		t.Errorf("after rolling back 021, %d definitions, want %d: the never and always ones kept", got, rows20+2)
	}
	if err := migrate.To(ctx, s.Pool(), 21); err != nil {
		t.Fatalf("apply 021 again: %v", err)
	}
}
