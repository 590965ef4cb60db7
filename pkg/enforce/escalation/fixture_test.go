package escalation_test

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/enforcefixture"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// fixture is the shared fixture's database and Enforcer on a fixed clock
// that starts at the beginning of a day, observed by an Escalator and by
// the record of violations the Escalator records its lockouts in.
type fixture struct {
	*enforcefixture.Fixture
	rec *violations.Recorder
}

func newFixture(t *testing.T, p escalation.Policy, o escalation.Opts) *fixture {
	t.Helper()
	f := &fixture{Fixture: enforcefixture.Start(t)}
	rec, err := violations.New(postgres.NewEventSink(f.Store.Pool()), violations.Opts{Now: f.Clock.Now, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Close) // after the Enforcer's Close, which registers later
	counters, source := postgres.NewCounterStore(f.Store.Pool()), postgres.NewSource(f.Store.Pool())
	if o.Record == nil {
		o.Record = rec
	}
	esc, err := escalation.New(source, counters, p, o)
	if err != nil {
		t.Fatal(err)
	}
	f.Enforce(enforce.Options{Counters: counters, Source: source, Observers: []enforce.Observer{rec, esc}})
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

func anonymous(ip string) enforce.Call {
	return enforce.Call{TargetType: "mcp_server", TargetName: "srv", ClientIP: ip}
}
