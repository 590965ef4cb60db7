package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// TestRollingBack006RestoresRlTake: migration 006 replaces rl_take from a
// tern shared template; rolling it back gives the database exactly the
// functions it had at 005 (rl_take's definition, and no helper left).
func TestRollingBack006RestoresRlTake(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, pgtest.NewDatabase(t), store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	functions := func() map[string]string {
		t.Helper()
		return schemaOf(t, ctx, s, rlFunctions)
	}
	if err := migrate.To(ctx, s.Pool(), 5); err != nil {
		t.Fatal(err)
	}
	at5 := functions()
	if len(at5) == 0 {
		t.Fatal("no rl_ functions at 005")
	}
	if err := migrate.To(ctx, s.Pool(), 6); err != nil {
		t.Fatal(err)
	}
	at6 := functions()
	take := "function rl_take(integer[],text[],bigint[],bigint[],boolean[],timestamp with time zone[],bigint[],boolean[])"
	if at6[take] == "" || at6[take] == at5[take] {
		t.Fatalf("006 did not replace %s", take)
	}
	if err := migrate.To(ctx, s.Pool(), 5); err != nil {
		t.Fatalf("roll back 006: %v", err)
	}
	back := functions()
	for sig, def := range at5 {
		if back[sig] != def {
			t.Errorf("after rolling back 006, %s is\n%s\nwant (as at 005)\n%s", sig, back[sig], def)
		}
	}
	for sig := range back {
		if _, ok := at5[sig]; !ok {
			t.Errorf("after rolling back 006, %s is left", sig)
		}
	}
}
