package client_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/testenv"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// The examples in example_test.go run against a real rlapi over a real
// PostgreSQL, like internal/apitest, but testing.M offers no testing.TB to
// hand it, so this file does the same work by hand: every example gets its
// own server over its own database, cloned from a template migrated once per
// test binary, and TestMain tears them all down after m.Run.
//
// Without DATABASE_URL the examples cannot run. Under make test and CI=true
// that is a failure (a run without a database has tested nothing, as in
// pgtest: testenv.ServersRequired);
// otherwise TestMain says so and skips the examples, and the package's unit
// tests, which need no database, still run.

func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv("DATABASE_URL") == "" {
		if testenv.ServersRequired() {
			fmt.Fprintln(os.Stderr, "pkg/client: DATABASE_URL is not set and RLCTL_REQUIRE_SERVERS=1 or CI=true: the examples need PostgreSQL (make test provides one)")
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "pkg/client: DATABASE_URL is not set: skipping the examples, which run against a real rlapi (`make test` provides PostgreSQL)")
		// -skip applies to examples as it does to tests.
		skip := "^Example"
		if prev := flag.Lookup("test.skip").Value.String(); prev != "" {
			skip += "|" + prev
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintln(os.Stderr, "pkg/client: set -test.skip:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	if err := examples.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "pkg/client: tear down example servers:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// exampleServer starts an rlapi on 127.0.0.1:0 over a fresh database and
// returns its URL and an admin token. It panics on failure: an example has
// no other way to fail before its output is compared.
func exampleServer() (baseURL, adminToken string) {
	baseURL, adminToken, err := examples.start()
	if err != nil {
		panic("start rlapi for the example: " + err.Error())
	}
	return baseURL, adminToken
}

var examples exampleServers

// exampleServers owns the template database, and each example's database and
// server until stop.
type exampleServers struct {
	mu       sync.Mutex
	server   string // DATABASE_URL
	template string // migrated once, cloned per example
	stops    []func() error
}

func (e *exampleServers) start() (baseURL, adminToken string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if e.template == "" {
		server := os.Getenv("DATABASE_URL")
		if server == "" {
			return "", "", errors.New("DATABASE_URL is not set")
		}
		if err := e.buildTemplate(ctx, server); err != nil {
			return "", "", fmt.Errorf("template database: %w", err)
		}
	}

	name := "rltest_ex_" + randomHex(6)
	if err := adminExec(ctx, e.server, `create database `+name+` template `+e.template); err != nil {
		return "", "", fmt.Errorf("create database: %w", err)
	}
	dropDB := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return adminExec(ctx, e.server, `drop database if exists `+name+` with (force)`)
	}
	st, err := store.Open(ctx, withDatabase(e.server, name), store.Opts{MaxConns: 8, ApplicationName: "rlctl-examples"})
	if err != nil {
		return "", "", errors.Join(fmt.Errorf("open database: %w", err), dropDB())
	}
	secret, sum := token.New()
	if _, err := st.CreateToken(ctx, "example-admin", "admin", sum, nil); err != nil {
		st.Close()
		return "", "", errors.Join(fmt.Errorf("create admin token: %w", err), dropDB())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return "", "", errors.Join(err, dropDB())
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("RLAPI_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	srv := api.New(st, api.Config{}, api.Opts{Logger: log, Counters: postgres.NewCounterStore(st.Pool()), CounterAdmin: postgres.NewCounterStore(st.Pool())})
	srvCtx, stopSrv := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(srvCtx, ln) }()

	e.stops = append(e.stops, func() error {
		stopSrv()
		err := <-done
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		st.Close()
		return errors.Join(err, dropDB())
	})
	return "http://" + ln.Addr().String(), secret, nil
}

// buildTemplate creates and migrates the database every example clones, so
// that the migrations run once per test binary rather than once per example.
func (e *exampleServers) buildTemplate(ctx context.Context, server string) error {
	name := "rltest_ex_tmpl_" + randomHex(6)
	if err := adminExec(ctx, server, `create database `+name+` template template0`); err != nil {
		return err
	}
	st, err := store.Open(ctx, withDatabase(server, name), store.Opts{MaxConns: 2, ApplicationName: "rlctl-examples"})
	if err == nil {
		_, err = migrate.Up(ctx, st.Pool())
		st.Close() // a template must have no connections when cloned
	}
	if err != nil {
		return errors.Join(err, adminExec(ctx, server, `drop database if exists `+name+` with (force)`))
	}
	e.server, e.template = server, name
	return nil
}

// stop shuts every server down and drops every database, the template last.
func (e *exampleServers) stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, stop := range e.stops {
		errs = append(errs, stop())
	}
	e.stops = nil
	if e.template != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		errs = append(errs, adminExec(ctx, e.server, `drop database if exists `+e.template+` with (force)`))
		e.template = ""
	}
	return errors.Join(errs...)
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

// withDatabase points a server URL (or key=value DSN) at database name.
func withDatabase(server, name string) string {
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" {
		return server + " dbname=" + name // a later dbname wins
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms
	return hex.EncodeToString(b)
}
