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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/enforcefixture"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// fixture is the shared fixture's database and Enforcer on a fixed clock
// that starts at the beginning of a day, observed by a Recorder on the
// same clock.
type fixture struct {
	*enforcefixture.Fixture
	rec *violations.Recorder
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
	f := &fixture{Fixture: enforcefixture.Start(t)}
	if sink == nil {
		sink = postgres.NewEventSink(f.Store.Pool())
	}
	o.Now = f.Clock.Now
	rec, err := violations.New(sink, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close) // after the Enforcer's Close, which registers later
	opts.Observers = []enforce.Observer{rec}
	f.Enforce(opts)
	f.rec = rec
	return f
}

func ptr[T any](v T) *T { return &v }

var (
	callerGroup = enforcefixture.CallerGroup
	target      = enforcefixture.Target
	user        = enforcefixture.User
)

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
