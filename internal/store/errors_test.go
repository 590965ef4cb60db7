package store_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
)

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// terminated returns a connection whose backend an administrator has
// terminated (pg_terminate_backend): its next query gets SQLSTATE 57P01,
// as every session does when PostgreSQL shuts down.
func terminated(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	victim, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { victim.Close(ctx) })
	killer, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	var ok bool
	if err := killer.QueryRow(ctx, `select pg_terminate_backend($1, 10000)`, victim.PgConn().PID()).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v %v", ok, err)
	}
	return victim
}

// AsUnavailable classifies the errors pgx really returns, by type and
// SQLSTATE: these are not constructed errors but what a refused connection,
// a terminated session and a deadline produce.
func TestUnavailableErrorsFromRealFailures(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	ctx := context.Background()

	_, refused := pgx.Connect(ctx, "postgres://rlctl:x@"+closedPort(t)+"/rlctl?sslmode=disable&connect_timeout=10")

	_, shutdown := terminated(t, dsn).Exec(ctx, `select 1`)

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, timeout := conn.Exec(short, `select pg_sleep(30)`)

	conn2, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close(ctx)
	_, syntax := conn2.Exec(ctx, `selec 1`)
	_, nul := conn2.Exec(ctx, `select $1::text`, "a\x00b")

	cases := []struct {
		name   string
		err    error
		reason string // "" when the error is not one of unavailability
	}{
		{"refused connection", refused, store.UnavailableRefused},
		{"terminated session (57P01)", shutdown, store.UnavailableShuttingDown},
		{"deadline", timeout, store.UnavailableTimeout},
		{"syntax error", syntax, ""},
		{"NUL in text", nul, ""},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		ue := store.AsUnavailable(c.err)
		switch {
		case c.reason == "" && ue != nil:
			t.Errorf("%s (%v): unavailable %q, want an ordinary error", c.name, c.err, ue.Reason)
		case c.reason != "" && ue == nil:
			t.Errorf("%s (%v): not recognized as unavailable", c.name, c.err)
		case c.reason != "" && ue.Reason != c.reason:
			t.Errorf("%s (%v): reason %q, want %q", c.name, c.err, ue.Reason, c.reason)
		case c.reason != "" && !errors.Is(ue, store.ErrUnavailable):
			t.Errorf("%s: not errors.Is ErrUnavailable", c.name)
		}
	}
}

// The store's own methods return them as *UnavailableError: a pool whose
// one connection was terminated answers the next query with 57P01.
func TestStoreNamesAShutdownUnavailable(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	// No ping before handing out a connection: the terminated one is used.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st := store.New(pool)
	var pid uint32
	if err := pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error { pid = c.Conn().PgConn().PID(); return nil }); err != nil {
		t.Fatal(err)
	}
	killer, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(ctx)
	if _, err := killer.Exec(ctx, `select pg_terminate_backend($1, 10000)`, pid); err != nil {
		t.Fatal(err)
	}
	_, err = st.ListTokens(ctx)
	var ue *store.UnavailableError
	if !errors.As(err, &ue) || ue.Reason != store.UnavailableShuttingDown {
		t.Fatalf("ListTokens on a terminated session: %v, want unavailable (shutting-down)", err)
	}
	// The pool drops the dead connection: the next call connects anew.
	if _, err := st.ListTokens(ctx); err != nil {
		t.Fatalf("after the terminated session: %v", err)
	}
}
