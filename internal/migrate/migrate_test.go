package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// TestMigrationsApplyRollBackApply checks every migration's rollback: all
// up, all down to an empty schema, all up again.
func TestMigrationsApplyRollBackApply(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := store.Open(ctx, pgtest.NewDatabase(t), store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	st, err := migrate.Status(ctx, s.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if st.Current != 0 || !st.Behind() {
		t.Fatalf("fresh database schema = %+v, want version 0 and behind", st)
	}
	st, err = migrate.Up(ctx, s.Pool())
	if err != nil {
		t.Fatal(err)
	}
	if st.Behind() || st.Current != st.Latest || st.Latest < 1 {
		t.Fatalf("after migrate = %+v, want current = latest", st)
	}
	if err := migrate.To(ctx, s.Pool(), 0); err != nil {
		t.Fatalf("roll back to 0: %v", err)
	}
	var tables int
	if err := s.Pool().QueryRow(ctx, `select count(*) from pg_tables where schemaname = 'public' and tablename like 'rl\_%' and tablename <> 'rl_schema_version'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d rl_ tables left after rolling back to 0", tables)
	}
	if st, err = migrate.Up(ctx, s.Pool()); err != nil || st.Behind() {
		t.Fatalf("migrate again = %+v, %v", st, err)
	}
	if _, err := s.GetDefinition(ctx, "quarantine:group:quarantine-callers:1"); err != nil {
		t.Errorf("sentinel after re-apply: %v", err)
	}
}
