package violations_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
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
// the beginning of a day, observed by a Recorder on the same clock.
type fixture struct {
	t     *testing.T
	st    *store.Store
	e     *enforce.Enforcer
	rec   *violations.Recorder
	clock *clock
}

// newFixture records to rl_events, or to sink when one is given.
func newFixture(t *testing.T, o violations.Opts, sink ...violations.Sink) *fixture {
	t.Helper()
	var s violations.Sink
	if len(sink) > 0 {
		s = sink[0]
	}
	return newFixtureWith(t, enforce.Options{}, o, s)
}

// newFixtureWith is newFixture with Enforcer options; a nil sink is
// rl_events.
func newFixtureWith(t *testing.T, opts enforce.Options, o violations.Opts, sink violations.Sink) *fixture {
	t.Helper()
	st := pgtest.NewStore(t)
	f := &fixture{t: t, st: st, clock: &clock{now: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}}
	if sink == nil {
		sink = postgres.NewEventSink(st.Pool())
	}
	o.Now = f.clock.Now
	rec, err := violations.New(sink, o)
	if err != nil {
		t.Fatal(err)
	}
	opts.Now, opts.CacheTTL, opts.SweepInterval = f.clock.Now, 72*time.Hour, -1
	opts.Observers = []enforce.Observer{rec}
	e, err := postgres.New(context.Background(), st.Pool(), opts)
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

func toolDef(name string, window, max int, scope string) ratelimit.Definition {
	d := target("mcp_tool", name, window, max)
	d.ToolScope = scope
	return d
}

func toolCall(user, tool string) enforce.Call {
	return enforce.Call{Username: user, TargetType: "mcp_server", TargetName: "github", Tool: tool}
}

func route(tier string, window int, paths ...string) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: "route", Name: tier, WindowSeconds: window,
		Paths: paths, Enabled: true}
}

func routeCall(method, path, username, ip string) enforce.Call {
	return enforce.Call{Method: method, Path: path, Username: username, ClientIP: ip}
}

func user(name, server string) enforce.Call {
	return enforce.Call{Username: name, TargetType: "mcp_server", TargetName: server}
}

// lockedBuffer is a bytes.Buffer safe for the flush goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines decodes the JSON lines written so far.
func (b *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("violation log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func listEvents(t *testing.T, st *store.Store, f store.EventFilter) []ratelimit.Event {
	t.Helper()
	evs, err := st.ListEvents(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// series lists the samples of one family as "label=value,... value".
func series(t *testing.T, reg *prometheus.Registry, name string) []string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out = append(out, strings.Join(labels, ",")+" "+strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}
