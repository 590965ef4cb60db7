package enforce_test

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

// fixture is one database and one Enforcer on a fixed clock that starts at
// the beginning of a day (so minute, hour and day windows start together).
type fixture struct {
	t     *testing.T
	st    *store.Store
	e     *enforce.Enforcer
	clock *clock
}

func newFixture(t *testing.T, opts enforce.Options) *fixture {
	t.Helper()
	st := pgtest.NewStore(t)
	f := &fixture{t: t, st: st, clock: &clock{now: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}}
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

func ptr[T any](v T) *T { return &v }

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

// burst checks n calls and returns how many were allowed.
func (f *fixture) burst(c enforce.Call, n int) int {
	f.t.Helper()
	allowed := 0
	for range n {
		if f.check(c).Allowed {
			allowed++
		}
	}
	return allowed
}

func callerGroup(name string, window int, user, agent *int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "caller", EntityType: "group", Name: name, WindowSeconds: window,
		UserMaxRequests: user, AgentMaxRequests: agent, Enabled: true}
}

func target(entityType, name string, window, max int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: entityType, Name: name, WindowSeconds: window, MaxRequests: ptr(max), Enabled: true}
}

func user(name, server string) enforce.Call {
	return enforce.Call{Username: name, TargetType: "mcp_server", TargetName: server}
}

func agent(id, server string) enforce.Call {
	return enforce.Call{ClientID: id, TargetType: "mcp_server", TargetName: server}
}

// counter reads the stored count of every counter whose key contains part.
func (f *fixture) counter(part string) int64 {
	f.t.Helper()
	var n int64
	err := f.st.Pool().QueryRow(context.Background(), `select coalesce(sum(count), 0) from rl_counters where key like '%' || $1 || '%'`, part).Scan(&n)
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}
