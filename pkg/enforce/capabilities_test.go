package enforce_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
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

// The core needs no optional capability: every feature that does (leases
// need GiveBack; the failed-credential throttle and escalation need Reset,
// escalation a source with LockOut) is built beside it and refused by its
// own constructor, naming the capability (pkg/enforce/lease,
// pkg/auththrottle and pkg/enforce/escalation test that). Over a store
// that declares neither, New starts and decides, and a call over the
// limit is refused.
func TestCoreNeedsNoOptionalCapability(t *testing.T) {
	t.Parallel()
	limit := 1
	def := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s", WindowSeconds: 60,
		MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce}
	e, err := enforce.New(t.Context(), enforce.Options{Counters: lacking{memory.New(), false, false},
		Source: enforcetest.StaticSource(enforce.State{Definitions: append(enforcetest.Sentinels(), def)}), SweepInterval: -1})
	if err != nil {
		t.Fatalf("New over a store that can neither give back nor reset: %v, want it to start", err)
	}
	defer e.Close()
	call := enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	for i, want := range []bool{true, false} {
		if d, err := e.Check(t.Context(), call); err != nil || d.Allowed != want {
			t.Errorf("call %d: %+v, %v; want allowed %v", i+1, d, err, want)
		}
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
