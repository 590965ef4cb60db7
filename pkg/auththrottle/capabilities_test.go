package auththrottle_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// noReset is a counter store that declares it cannot reset counters.
type noReset struct{ enforce.CounterStore }

func (s noReset) Capabilities() enforce.CounterCapabilities {
	c := s.CounterStore.Capabilities()
	c.Reset = false
	return c
}

func (noReset) Reset(context.Context, []enforce.CounterGate, time.Time, time.Time) error {
	return fmt.Errorf("no reset: %w", enforce.ErrNotImplemented)
}

func (noReset) BackendName() string { return "lacking" }

// New refuses a store that cannot reset (a success resets the failure
// count: over such a store every success would silently reset nothing),
// naming the capability and the store; turned off, it needs nothing.
func TestNewNeedsReset(t *testing.T) {
	t.Parallel()
	_, err := auththrottle.New(noReset{memory.New()}, auththrottle.Options{})
	if err == nil || !strings.Contains(err.Error(), "Reset") || !strings.Contains(err.Error(), "lacking") {
		t.Fatalf("New over a store that cannot reset: %v, want an error naming Reset and the store", err)
	}
	if _, err := auththrottle.New(noReset{memory.New()}, auththrottle.Options{MaxFailures: -1}); err != nil {
		t.Fatalf("New turned off over a store that cannot reset: %v, want it built (nothing counts)", err)
	}
	if _, err := auththrottle.New(memory.New(), auththrottle.Options{}); err != nil {
		t.Fatalf("New over a store that resets: %v", err)
	}
}

// A throttle guards one Enforcer: the second enforce.New it is given to
// refuses it, rather than splitting its counts and logs between two.
func TestGuardsOneEnforcer(t *testing.T) {
	t.Parallel()
	counters := memory.New()
	th, err := auththrottle.New(counters, auththrottle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := enforce.Options{Counters: counters, Source: enforcetest.StaticSource(enforce.State{}), SweepInterval: -1, Guard: th}
	e, err := enforce.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e2, err := enforce.New(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "Options.Guard") {
		if e2 != nil {
			e2.Close()
		}
		t.Fatalf("a second Enforcer over the same throttle: %v, want a refusal naming Options.Guard", err)
	}
}
