package httpgate_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/enforcefixture"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// startOfDay is where the fixtures' clocks start, so that minute, hour and
// day windows start together.
var startOfDay = enforcefixture.StartOfDay

// fixture is the shared fixture: one database and one Enforcer over
// PostgreSQL on a fixed clock.
type fixture = enforcefixture.Fixture

func newFixture(t *testing.T, opts enforce.Options) *fixture {
	t.Helper()
	return enforcefixture.New(t, opts)
}

// breakCounters makes every take of the counter store fail, as a database
// that lost its counting function would, until the returned repair runs.
func breakCounters(t *testing.T, f *fixture) func() {
	t.Helper()
	if _, err := f.Store.Pool().Exec(context.Background(), `alter function rl_take_024 rename to rl_take_gone`); err != nil {
		t.Fatal(err)
	}
	return func() {
		if _, err := f.Store.Pool().Exec(context.Background(), `alter function rl_take_gone rename to rl_take_024`); err != nil {
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
	clk := enforcefixture.NewClock(startOfDay)
	e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(), Source: enforcetest.StaticSource(state),
		Now: clk.Now, CacheTTL: 72 * time.Hour, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func ptr[T any](v T) *T { return &v }

func callerGroup(name string, window int, user *int) ratelimit.Definition {
	return ratelimit.Definition{Axis: "caller", EntityType: "group", Name: name, WindowSeconds: window,
		UserMaxRequests: user, Enabled: true}
}

func route(tier string, window int, paths ...string) ratelimit.Definition {
	return ratelimit.Definition{Axis: "target", EntityType: "route", Name: tier, WindowSeconds: window,
		Paths: paths, Enabled: true}
}

var (
	target = enforcefixture.Target
	user   = enforcefixture.User
)
