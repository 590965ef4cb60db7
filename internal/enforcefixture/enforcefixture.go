// Package enforcefixture is the test fixture the enforcement packages
// share: a migrated database of their own, a settable clock, and an
// Enforcer over PostgreSQL on that clock, with the steps their tests take
// (store definitions and memberships, reload, check). The core, the
// features built beside it (escalation, the record of violations) and the
// adapters (pkg/httpgate) test against the same fixture, so a change to
// how a test database is made is made once. It is for tests only: it
// fails the test on any error.
package enforcefixture

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// StartOfDay is where a fixture's clock starts, so that minute, hour and
// day windows start together.
var StartOfDay = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// Clock is a settable time, safe for the Enforcer's goroutines.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's time (an enforce.Options.Now).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Fixture is one database and, once Enforce has run, one Enforcer over it
// on Clock.
type Fixture struct {
	T     testing.TB
	Store *store.Store
	E     *enforce.Enforcer
	Clock *Clock
}

// Start makes a fixture's database and clock (at StartOfDay), without an
// Enforcer: for tests that build what observes or guards it first.
func Start(t testing.TB) *Fixture {
	t.Helper()
	return &Fixture{T: t, Store: pgtest.NewStore(t), Clock: NewClock(StartOfDay)}
}

// New is Start, then Enforce(opts).
func New(t testing.TB, opts enforce.Options) *Fixture {
	t.Helper()
	f := Start(t)
	f.Enforce(opts)
	return f
}

// Enforce starts the fixture's Enforcer (postgres.New over its database)
// with opts, closed when the test ends. Unless opts say otherwise it runs
// on the fixture's clock and reloads only when told (a cache TTL of 72
// hours: tests move the clock by days); the sweeper is off.
func (f *Fixture) Enforce(opts enforce.Options) *enforce.Enforcer {
	f.T.Helper()
	if opts.Now == nil {
		opts.Now = f.Clock.Now
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = 72 * time.Hour
	}
	opts.SweepInterval = -1
	e, err := postgres.New(context.Background(), f.Store.Pool(), opts)
	if err != nil {
		f.T.Fatal(err)
	}
	f.T.Cleanup(e.Close)
	f.E = e
	return e
}

// Def stores definitions (as the API would, minus the floors, which are a
// management-time safeguard; mode enforce unless set) and reloads the
// Enforcer.
func (f *Fixture) Def(defs ...ratelimit.Definition) {
	f.T.Helper()
	for _, d := range defs {
		if d.Mode == "" {
			d.Mode = ratelimit.ModeEnforce
		}
		err := f.Store.InTx(context.Background(), func(q *store.Queries) error {
			_, err := q.PutDefinition(context.Background(), d, store.Write{Actor: "test"})
			return err
		})
		if err != nil {
			f.T.Fatalf("put %s: %v", d.Key(), err)
		}
	}
	f.Refresh()
}

// Member puts subjectType:subject in groups and reloads the Enforcer.
func (f *Fixture) Member(subjectType, subject string, groups ...string) {
	f.T.Helper()
	err := f.Store.InTx(context.Background(), func(q *store.Queries) error {
		_, err := q.PutMembership(context.Background(), ratelimit.Membership{SubjectType: subjectType, Subject: subject, Groups: groups}, store.Write{})
		return err
	})
	if err != nil {
		f.T.Fatal(err)
	}
	f.Refresh()
}

// Refresh reloads the Enforcer's snapshot now.
func (f *Fixture) Refresh() {
	f.T.Helper()
	if err := f.E.Refresh(context.Background()); err != nil {
		f.T.Fatal(err)
	}
}

// Check decides c, failing the test on an error.
func (f *Fixture) Check(c enforce.Call) enforce.Decision {
	f.T.Helper()
	d, err := f.E.Check(context.Background(), c)
	if err != nil {
		f.T.Fatalf("check %+v: %v", c, err)
	}
	return d
}

// Burst checks c n times and says how many were allowed.
func (f *Fixture) Burst(c enforce.Call, n int) int {
	f.T.Helper()
	allowed := 0
	for range n {
		if f.Check(c).Allowed {
			allowed++
		}
	}
	return allowed
}

// Ptr is a pointer to v (a definition's optional limits).
func Ptr[T any](v T) *T { return &v }

// CallerGroup is an enabled caller definition of group name.
func CallerGroup(name string, window int, user, agent *int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "caller", EntityType: "group", Name: name, WindowSeconds: window,
		UserMaxRequests: user, AgentMaxRequests: agent, Enabled: true}
}

// Target is an enabled target definition of max calls per window.
func Target(entityType, name string, window, max int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: entityType, Name: name, WindowSeconds: window, MaxRequests: Ptr(max), Enabled: true}
}

// User is a call of user name to MCP server server.
func User(name, server string) enforce.Call {
	return enforce.Call{Username: name, TargetType: "mcp_server", TargetName: server}
}

// Agent is a call of agent (client) id to MCP server server.
func Agent(id, server string) enforce.Call {
	return enforce.Call{ClientID: id, TargetType: "mcp_server", TargetName: server}
}
