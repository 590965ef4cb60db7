// Package apitest starts a real rlapi for tests: a fresh migrated database,
// the real handler on a real loopback listener, and tokens for each role.
package apitest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/poolmetrics"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// Env is one running rlapi.
type Env struct {
	URL        string // http://127.0.0.1:port
	AdminToken string
	Store      *store.Store
	// Enforcer answers the decision endpoints.
	Enforcer *enforce.Enforcer
	// Violations is the record of violations observing the Enforcer
	// (rl_events): tests flush it (Flush) and add to it (RecordEvent).
	Violations *violations.Recorder
	// Server is the rlapi served.
	Server *api.Server
}

// Start serves rlapi on 127.0.0.1:0 over a fresh database until the test
// ends. cfg may be zero.
func Start(t testing.TB, cfg api.Config) *Env {
	t.Helper()
	st := pgtest.NewStore(t)
	return StartOn(t, st, cfg)
}

// StartOn serves rlapi over an existing store.
func StartOn(t testing.TB, st *store.Store, cfg api.Config) *Env {
	t.Helper()
	e := serve(t, st, cfg, Options{})
	// A second rlapi over the same database gets an admin token of its own.
	name := "test-admin"
	if tokens, err := st.ListTokens(context.Background()); err == nil && len(tokens) > 0 {
		name = fmt.Sprintf("test-admin-%d", len(tokens)+1)
	}
	e.AdminToken = e.Token(t, name, "admin")
	return e
}

// StartReplica serves a second rlapi over the database of e, with its own
// pool, enforcer and caches, as another replica would; it shares e's
// tokens.
func StartReplica(t testing.TB, e *Env, cfg api.Config) *Env {
	t.Helper()
	return startReplica(t, e, cfg, Options{})
}

func startReplica(t testing.TB, e *Env, cfg api.Config, o Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := store.Open(ctx, e.Store.Pool().Config().ConnString(), store.Opts{ApplicationName: "rlapi-replica"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	r := serve(t, st, cfg, o)
	r.AdminToken = e.AdminToken
	return r
}

// Options tune the Enforcer of an Env beyond what rlapi's Config says
// (rlapi's flags build them in cmd/rlapi).
type Options struct {
	// Escalation turns on escalation lockouts (rlapi --lockout-*).
	Escalation *escalation.Policy
	// Logger receives rlapi's and the Enforcer's logs (nil: discarded,
	// or stderr when RLAPI_TEST_LOG is set).
	Logger *slog.Logger
	// Counters is where the decisions, rlapi's own token lockout and the
	// counters API count (rlapi --counters-url; nil: the database's
	// rl_counters).
	Counters Counters
}

// Counters is a counter store rlapi counts in and lists counters of.
type Counters interface {
	enforce.CounterStore
	counteradmin.Admin
}

// StartWith is Start with Enforcer options.
func StartWith(t testing.TB, cfg api.Config, o Options) *Env {
	t.Helper()
	st := pgtest.NewStore(t)
	e := serve(t, st, cfg, o)
	e.AdminToken = e.Token(t, "test-admin", "admin")
	return e
}

// StartReplicaWith is StartReplica with Enforcer options.
func StartReplicaWith(t testing.TB, e *Env, cfg api.Config, o Options) *Env {
	t.Helper()
	return startReplica(t, e, cfg, o)
}

func serve(t testing.TB, st *store.Store, cfg api.Config, o Options) *Env {
	t.Helper()
	if cfg.BackendTimeout == 0 {
		// rlapi's 250ms bound on a decision's token lookup is a production
		// deadline; a test machine running many suites at once can miss
		// it. Tests of that deadline set it themselves.
		cfg.BackendTimeout = 5 * time.Second
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("RLAPI_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if o.Logger != nil {
		log = o.Logger
	}
	registry := prometheus.NewRegistry()
	registry.MustRegister(poolmetrics.New(st.Pool()))
	counters := o.Counters
	if counters == nil {
		counters = postgres.NewCounterStore(st.Pool())
	}
	// Wired as cmd/rlapi wires them: the record of violations and
	// escalation observe the decisions, and the failed-credential
	// throttle (5 failures in 60 s, 300 s, as rlapi runs it) guards them
	// and reports its lockouts to the record.
	rec, err := violations.New(postgres.NewEventSink(st.Pool()), violations.Opts{Logger: log, Registerer: registry})
	if err != nil {
		t.Fatal(err)
	}
	throttle, err := auththrottle.New(counters, auththrottle.Options{IPv6Prefix: cfg.IPv6Prefix, Registerer: registry, Record: rec.RecordEvent})
	if err != nil {
		rec.Close()
		t.Fatal(err)
	}
	source := postgres.NewSource(st.Pool())
	observers := []enforce.Observer{rec}
	if o.Escalation != nil {
		esc, err := escalation.New(source, counters, *o.Escalation, escalation.Opts{Record: rec, Logger: log})
		if err != nil {
			rec.Close()
			t.Fatal(err)
		}
		observers = append(observers, esc)
	}
	enf, err := postgres.New(context.Background(), st.Pool(), enforce.Options{SweepInterval: -1, Logger: log, Registerer: registry, IPv6Prefix: cfg.IPv6Prefix,
		Counters: counters, Source: source, Observers: observers, Guard: throttle})
	if err != nil {
		rec.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { enf.Close(); rec.Close() })
	pgc := st.Pool().Config().ConnConfig
	setup := api.ServerSetup{PingCounters: st.Pool().Ping, Info: wire.ServerInfo{CounterStore: wire.CounterStoreInfo{
		Backend: "postgres", Address: fmt.Sprintf("%s:%d/%s", pgc.Host, pgc.Port, pgc.Database)},
		// The harness's Enforcer takes the default fail policy.
		FailPolicy: wire.FailPolicyInfo{Default: ratelimit.FailPolicyOpen}}}
	srv := api.New(st, cfg, api.Opts{Logger: log, Enforcer: enf, AuthThrottle: throttle, Registry: registry, Counters: counters, CounterAdmin: counters,
		Violations: rec, Setup: setup})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("rlapi stopped with: %v", err)
		}
	})
	// Serve waits for the token listener a bounded while only; on a
	// loaded machine it may connect later and empty the token cache then,
	// so a test's first calls would be cached in vain. Wait for it.
	if cfg.TokenCacheTTL >= 0 {
		deadline := time.Now().Add(30 * time.Second)
		for !srv.TokenListenerLive() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	return &Env{URL: "http://" + ln.Addr().String(), Store: st, Enforcer: enf, Violations: rec, Server: srv}
}

// Token creates a token of role directly in the store and returns it.
func (e *Env) Token(t testing.TB, name, role string) string {
	t.Helper()
	secret, sum := token.New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := e.Store.CreateToken(ctx, name, role, sum, nil); err != nil {
		t.Fatalf("create %s token %q: %v", role, name, err)
	}
	return secret
}
