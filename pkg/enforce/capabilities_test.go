package enforce_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// lacking is a counter store that declares some capabilities missing (and
// answers enforce.ErrNotImplemented from their methods), as a store of a
// gateway's own may: what New must refuse to build on.
type lacking struct {
	enforce.CounterStore
	giveBack, reset bool
}

func (s lacking) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{GiveBack: s.giveBack, Reset: s.reset}
}

func (s lacking) ReturnUnused(ctx context.Context, rs []enforce.Return, deadline time.Time) error {
	if !s.giveBack {
		return fmt.Errorf("lacking: %w", enforce.ErrNotImplemented)
	}
	return s.CounterStore.ReturnUnused(ctx, rs, deadline)
}

func (s lacking) Reset(ctx context.Context, gates []enforce.CounterGate, now, deadline time.Time) error {
	if !s.reset {
		return fmt.Errorf("lacking: %w", enforce.ErrNotImplemented)
	}
	return s.CounterStore.Reset(ctx, gates, now, deadline)
}

func (lacking) BackendName() string { return "lacking" }

// New refuses every option that needs a capability its counter store
// does not declare, with a message naming the option and the capability,
// instead of running with the feature silently off; the same options over
// stores that declare it start. (Escalation, an observer, is refused by
// its own constructor: pkg/enforce/escalation's tests.)
func TestNewRefusesWhatTheSeamsCannotDo(t *testing.T) {
	t.Parallel()
	static := func(*testing.T) enforce.Source {
		return enforcetest.StaticSource(enforce.State{Definitions: enforcetest.Sentinels()})
	}
	for _, c := range []struct {
		name     string
		counters enforce.CounterStore
		source   func(*testing.T) enforce.Source
		opts     enforce.Options
		want     []string // in the error; none: New starts
	}{
		{"leases over a store that cannot give back", lacking{memory.New(), false, true}, static,
			enforce.Options{Leases: &enforce.LeaseOptions{}}, []string{"Options.Leases", "GiveBack", "lacking"}},
		{"leases over a store that gives back", lacking{memory.New(), true, false}, static,
			enforce.Options{Leases: &enforce.LeaseOptions{}}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			opts := c.opts
			opts.Counters, opts.Source, opts.SweepInterval = c.counters, c.source(t), -1
			e, err := enforce.New(t.Context(), opts)
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("New: %v, want it to start", err)
				}
				e.Close()
				return
			}
			if err == nil {
				e.Close()
				t.Fatalf("New started; want a refusal naming %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v; want it to name %q", err, w)
				}
			}
		})
	}
}

// The test suite's static source declares what it cannot do, as every
// source must.
func TestStaticSourceCapabilities(t *testing.T) {
	t.Parallel()
	enforcetest.TestSourceCapabilities(t, func(*testing.T) enforce.Source {
		return enforcetest.StaticSource(enforce.State{Definitions: enforcetest.Sentinels()})
	})
}
