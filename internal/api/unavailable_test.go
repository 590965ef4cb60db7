package api_test

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
)

// onePool is a pool of one connection that is handed out without a ping,
// so a test can break that connection and see the next request use it.
func onePool(t *testing.T, dsn string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func wantUnavailable(t *testing.T, a answer, says, notSays string) {
	t.Helper()
	if a.status != 503 {
		t.Fatalf("status %d, want 503: %s", a.status, a.body)
	}
	if a.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	detail, _ := a.json(t)["detail"].(string)
	if !strings.Contains(detail, says) || (notSays != "" && strings.Contains(detail, notSays)) {
		t.Errorf("detail %q, want it to say %q (and not %q)", detail, says, notSays)
	}
}

// A PostgreSQL session ended by a shutdown (SQLSTATE 57P01; a server
// starting up answers 57P03, the same class) is 503 with Retry-After,
// recognized by its code; the request after it is served on a new
// connection.
func TestDatabaseShutdownIs503(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	pool := onePool(t, dsn)
	st := store.New(pool)
	secret, sum := token.New()
	if _, err := st.CreateToken(context.Background(), "admin", "admin", sum, nil); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(api.New(st, api.Config{AuthMaxFailures: -1}, api.Opts{}).Handler())
	defer ts.Close()
	if a := do(t, ts.URL, call{method: "GET", path: "/api/rate-limits", token: secret}); a.status != 200 {
		t.Fatalf("before: %d %s", a.status, a.body)
	}
	var pid uint32
	if err := pool.AcquireFunc(context.Background(), func(c *pgxpool.Conn) error { pid = c.Conn().PgConn().PID(); return nil }); err != nil {
		t.Fatal(err)
	}
	killer, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(context.Background())
	if _, err := killer.Exec(context.Background(), `select pg_terminate_backend($1, 10000)`, pid); err != nil {
		t.Fatal(err)
	}
	wantUnavailable(t, do(t, ts.URL, call{method: "GET", path: "/api/rate-limits", token: secret}), "shutting down", "in time")
	if a := do(t, ts.URL, call{method: "GET", path: "/api/rate-limits", token: secret}); a.status != 200 {
		t.Fatalf("after: %d %s", a.status, a.body)
	}
}

// A database that refuses connections is 503 saying so, not "did not
// answer in time".
func TestDatabaseRefusingConnectionsIs503(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	pool := onePool(t, "postgres://rlctl:x@"+addr+"/rlctl?sslmode=disable&connect_timeout=10")
	ts := httptest.NewServer(api.New(store.New(pool), api.Config{AuthMaxFailures: -1}, api.Opts{}).Handler())
	defer ts.Close()
	for _, c := range []call{
		{method: "GET", path: "/api/rate-limits", token: "rlt_anything"},
		{method: "GET", path: "/readyz"},
	} {
		a := do(t, ts.URL, c)
		if c.path == "/readyz" {
			if a.status != 503 {
				t.Errorf("readyz: %d, want 503", a.status)
			}
			continue
		}
		wantUnavailable(t, a, "refused", "in time")
	}
}
