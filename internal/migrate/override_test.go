package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
)

// TestMigration026OverrideAndRollsBack: 026 adds override (false on every
// definition so far) and the user, client and team caller definitions;
// the schema refuses an override where it could outrank nothing and a
// subject definition that is not one; rolling back removes the subject
// definitions and restores the schema of 025; 026 applies again.
func TestMigration026OverrideAndRollsBack(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := storeAt(t, 25)
	schema := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, definitionsTable)
	}
	execSQL(t, s, `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, updated_by)
		values ('caller:group:premium:60', 'caller', 'group', 'premium', 60, 100, 't')`)
	at25 := schema()
	rows25 := countDefinitions(t, ctx, s)
	if err := migrate.To(ctx, s.Pool(), 26); err != nil {
		t.Fatal(err)
	}
	var override bool
	if err := s.Pool().QueryRow(ctx, `select override from rl_definitions where id = 'caller:group:premium:60'`).Scan(&override); err != nil || override {
		t.Errorf("a definition written before 026 reads override %t (%v), want false", override, err)
	}
	execSQL(t, s, `update rl_definitions set override = true where id = 'caller:group:premium:60';
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, override, updated_by)
		values ('caller:user:alice:60', 'caller', 'user', 'alice', 60, 5, true, 't'),
		       ('caller_target:client:bot:60', 'caller_target', 'client', 'bot', 60, 5, true, 't'),
		       ('caller:team:acme:60', 'caller', 'team', 'acme', 60, 5, true, 't')`)
	for name, sql := range map[string]string{
		"an override for everyone": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, everyone, override, updated_by)
			values ('caller:group:all:60', 'caller', 'group', 'all', 60, 25, true, true, 't')`,
		"an override per ip": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, per, override, updated_by)
			values ('caller:group:ips:60', 'caller', 'group', 'ips', 60, 25, 'ip', true, 't')`,
		"a shadow group override": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, mode, override, updated_by)
			values ('caller:group:try:60', 'caller', 'group', 'try', 60, 25, 'shadow', true, 't')`,
		"a subject definition that is no override": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, updated_by)
			values ('caller:user:bob:60', 'caller', 'user', 'bob', 60, 5, 't')`,
		"a user target definition": `insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, updated_by)
			values ('target:user:bob:60', 'target', 'user', 'bob', 60, 5, 't')`,
	} {
		if _, err := s.Pool().Exec(ctx, sql); err == nil {
			t.Errorf("%s was stored", name)
		}
	}

	if err := migrate.To(ctx, s.Pool(), 25); err != nil {
		t.Fatalf("roll back 026: %v", err)
	}
	back := schema()
	for name, def := range at25 {
		if back[name] != def {
			t.Errorf("after rolling back 026, %s is\n%s\nwant (as at 025)\n%s", name, back[name], def)
		}
	}
	for name := range back {
		if _, ok := at25[name]; !ok {
			t.Errorf("after rolling back 026, %s is left", name)
		}
	}
	if got := countDefinitions(t, ctx, s); got != rows25 {
		t.Errorf("after rolling back 026, %d definitions, want %d (the subject definitions removed)", got, rows25)
	}
	if _, err := migrate.Up(ctx, s.Pool()); err != nil {
		t.Fatalf("apply 026 again: %v", err)
	}
}
