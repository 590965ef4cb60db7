package httpgate_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// clock is a settable time for tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// startOfDay is where the fixtures' clocks start, so that minute, hour and
// day windows start together.
var startOfDay = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// fixture is one database and one Enforcer over PostgreSQL on a fixed
// clock.
type fixture struct {
	t     *testing.T
	st    *store.Store
	e     *enforce.Enforcer
	clock *clock
}

func newFixture(t *testing.T, opts enforce.Options) *fixture {
	t.Helper()
	st := pgtest.NewStore(t)
	f := &fixture{t: t, st: st, clock: &clock{now: startOfDay}}
	if opts.Now == nil {
		opts.Now = f.clock.Now
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = 72 * time.Hour // tests move the clock by days
	}
	opts.SweepInterval = -1
	e, err := postgres.New(context.Background(), st.Pool(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	f.e = e
	return f
}

// def stores definitions (as the API would, minus the floors, which are a
// management-time safeguard) and reloads the enforcer.
func (f *fixture) def(defs ...ratelimit.Definition) {
	f.t.Helper()
	for _, d := range defs {
		if d.Mode == "" {
			d.Mode = ratelimit.ModeEnforce
		}
		err := f.st.InTx(context.Background(), func(q *store.Queries) error {
			_, err := q.PutDefinition(context.Background(), d, store.Write{Actor: "test"})
			return err
		})
		if err != nil {
			f.t.Fatalf("put %s: %v", d.Key(), err)
		}
	}
	f.refresh()
}

func (f *fixture) member(subjectType, subject string, groups ...string) {
	f.t.Helper()
	err := f.st.InTx(context.Background(), func(q *store.Queries) error {
		_, err := q.PutMembership(context.Background(), ratelimit.Membership{SubjectType: subjectType, Subject: subject, Groups: groups}, store.Write{})
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func (f *fixture) refresh() {
	f.t.Helper()
	if err := f.e.Refresh(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) check(c enforce.Call) enforce.Decision {
	f.t.Helper()
	d, err := f.e.Check(context.Background(), c)
	if err != nil {
		f.t.Fatalf("check %+v: %v", c, err)
	}
	return d
}

// breakCounters makes every take of the counter store fail, as a database
// that lost its counting function would, until the returned repair runs.
func breakCounters(t *testing.T, f *fixture) func() {
	t.Helper()
	if _, err := f.st.Pool().Exec(context.Background(), `alter function rl_take_012 rename to rl_take_gone`); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := f.st.Pool().Exec(context.Background(), `alter function rl_take_gone rename to rl_take_012`); err != nil {
			t.Fatal(err)
		}
	}
}

// memEnforcer is an Enforcer over the in-memory counter store and a static
// source holding defs and memberships, on a clock at the start of a day.
func memEnforcer(t *testing.T, defs []ratelimit.Definition, memberships ...ratelimit.Membership) *enforce.Enforcer {
	t.Helper()
	state := enforce.State{Definitions: enforcetest.Sentinels(), Memberships: memberships}
	for _, d := range defs {
		if d.Mode == "" {
			d.Mode = ratelimit.ModeEnforce
		}
		d.ID = d.Key()
		state.Definitions = append(state.Definitions, d)
	}
	clk := &clock{now: startOfDay}
	e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(), Source: enforcetest.StaticSource(state),
		Now: clk.Now, CacheTTL: 72 * time.Hour, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func ptr[T any](v T) *T { return &v }

func target(entityType, name string, window, max int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: entityType, Name: name, WindowSeconds: window, MaxRequests: ptr(max), Enabled: true}
}

func callerGroup(name string, window int, user *int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "caller", EntityType: "group", Name: name, WindowSeconds: window,
		UserMaxRequests: user, Enabled: true}
}

func route(tier string, window int, paths ...string) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: "route", Name: tier, WindowSeconds: window,
		Paths: paths, Enabled: true}
}

func user(name, server string) enforce.Call {
	return enforce.Call{Username: name, TargetType: "mcp_server", TargetName: server}
}
