package escalation_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
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
// the beginning of a day, observed by an Escalator and by the record of
// violations the Escalator records its lockouts in.
type fixture struct {
	t     *testing.T
	st    *store.Store
	e     *enforce.Enforcer
	rec   *violations.Recorder
	clock *clock
}

func newFixture(t *testing.T, p escalation.Policy, o escalation.Opts) *fixture {
	t.Helper()
	st := pgtest.NewStore(t)
	f := &fixture{t: t, st: st, clock: &clock{now: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}}
	rec, err := violations.New(postgres.NewEventSink(st.Pool()), violations.Opts{Now: f.clock.Now, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	counters, source := postgres.NewCounterStore(st.Pool()), postgres.NewSource(st.Pool())
	if o.Record == nil {
		o.Record = rec
	}
	esc, err := escalation.New(source, counters, p, o)
	if err != nil {
		t.Fatal(err)
	}
	e, err := postgres.New(context.Background(), st.Pool(), enforce.Options{Now: f.clock.Now, CacheTTL: 72 * time.Hour, SweepInterval: -1,
		Counters: counters, Source: source, Observers: []enforce.Observer{rec, esc}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); rec.Close() })
	f.e, f.rec = e, rec
	return f
}

func ptr[T any](v T) *T { return &v }

// def stores definitions and reloads the enforcer.
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

func callerGroup(name string, window int, user, agent *int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "caller", EntityType: "group", Name: name, WindowSeconds: window,
		UserMaxRequests: user, AgentMaxRequests: agent, Enabled: true}
}

func target(entityType, name string, window, max int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: entityType, Name: name, WindowSeconds: window, MaxRequests: ptr(max), Enabled: true}
}

func toolDef(name string, window, max int, scope string) ratelimit.Definition {
	d := target("mcp_tool", name, window, max)
	d.ToolScope = scope
	return d
}

func toolCall(user, tool string) enforce.Call {
	return enforce.Call{Username: user, TargetType: "mcp_server", TargetName: "github", Tool: tool}
}

func user(name, server string) enforce.Call {
	return enforce.Call{Username: name, TargetType: "mcp_server", TargetName: server}
}

func anonymous(ip string) enforce.Call {
	return enforce.Call{TargetType: "mcp_server", TargetName: "srv", ClientIP: ip}
}
