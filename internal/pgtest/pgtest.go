// Package pgtest gives each test its own PostgreSQL database, cloned from a
// migrated template and dropped at cleanup, so tests run in parallel and
// never see each other's rows. It talks to the server named by DATABASE_URL
// (make test starts a private one and sets it).
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/testenv"
	"github.com/rlctl/rlctl/migrations"
)

// templateOnce builds the template once per test binary; other binaries wait
// on an advisory lock and reuse it.
var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// ServerURL returns DATABASE_URL, or ends the test: it fails under make
// test and CI=true (a run without a database has tested nothing) and
// skips otherwise (testenv.Missing).
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		testenv.Missing(t, "DATABASE_URL is not set: run `make test`, which starts a private PostgreSQL, or export DATABASE_URL=$(scripts/devdb.sh url)")
	}
	return u
}

// NewDatabase creates an empty database (no schema) and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "template0")
}

// NewMigratedDatabase creates a database with the full schema and returns its URL.
func NewMigratedDatabase(t testing.TB) string {
	t.Helper()
	server := ServerURL(t)
	templateOnce.Do(func() { templateName, templateErr = buildTemplate(server) })
	if templateErr != nil {
		t.Fatalf("build template database: %v", templateErr)
	}
	return newDatabase(t, templateName)
}

// NewStore opens a store on a fresh migrated database, closed at cleanup.
func NewStore(t testing.TB) *store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, NewMigratedDatabase(t), store.Opts{MaxConns: 8, ApplicationName: "rlctl-test"})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func newDatabase(t testing.TB, template string) string {
	t.Helper()
	server := ServerURL(t)
	name := "rltest_" + randomHex(6)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := adminExec(ctx, server, fmt.Sprintf(`create database %s template %s`, name, template)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := adminExec(ctx, server, fmt.Sprintf(`drop database if exists %s with (force)`, name)); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return withDatabase(server, name)
}

// buildTemplate creates, migrates and freezes a template database named
// after the migrations' content, so a changed migration gets a new template
// and an unchanged one is built once per server.
func buildTemplate(server string) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "rltest_tmpl_" + sum
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	// One builder at a time across test binaries.
	if _, err := conn.Exec(ctx, `select pg_advisory_lock(hashtext('rlctl pgtest template'))`); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), `select pg_advisory_unlock(hashtext('rlctl pgtest template'))`) //nolint:errcheck // the session ends right after
	var exists bool
	if err := conn.QueryRow(ctx, `select exists (select 1 from pg_database where datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_build"
	if _, err := conn.Exec(ctx, `drop database if exists `+building+` with (force)`); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, `create database `+building+` template template0`); err != nil {
		return "", err
	}
	s, err := store.Open(ctx, withDatabase(server, building), store.Opts{MaxConns: 2})
	if err != nil {
		return "", err
	}
	_, err = migrate.Up(ctx, s.Pool())
	s.Close()
	if err != nil {
		return "", err
	}
	// Renamed only once complete, so a crash mid-build leaves no half-made template.
	if _, err := conn.Exec(ctx, `alter database `+building+` rename to `+name); err != nil {
		return "", err
	}
	return name, nil
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func adminExec(ctx context.Context, server, sql string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func withDatabase(server, name string) string {
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" {
		// A key=value DSN: a later dbname wins.
		return server + " dbname=" + name
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
