package enforce_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
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

// New refuses every option that needs a capability its counter store or
// source does not declare, with a message naming the option and the
// capability, instead of running with the feature silently off; the same
// options over stores that declare it start.
func TestNewRefusesWhatTheSeamsCannotDo(t *testing.T) {
	t.Parallel()
	escalation := &enforce.EscalationOptions{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute}
	pgSource := func(t *testing.T) enforce.Source { return postgres.NewSource(pgtest.NewStore(t).Pool()) }
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
		{"the failed-credential throttle over a store that cannot reset", lacking{memory.New(), true, false}, static,
			enforce.Options{AuthThrottle: &enforce.AuthThrottleOptions{}}, []string{"Options.AuthThrottle", "Reset", "lacking"}},
		{"the failed-credential throttle turned off over a store that cannot reset", lacking{memory.New(), true, false}, static,
			enforce.Options{AuthThrottle: &enforce.AuthThrottleOptions{MaxFailures: -1}}, nil},
		{"the failed-credential throttle over a store that resets", lacking{memory.New(), false, true}, static,
			enforce.Options{AuthThrottle: &enforce.AuthThrottleOptions{}}, nil},
		{"escalation over a store that cannot reset", lacking{memory.New(), true, false}, pgSource,
			enforce.Options{Escalation: escalation}, []string{"Options.Escalation", "Reset", "lacking"}},
		{"escalation over a source that cannot write lockouts", memory.New(), static,
			enforce.Options{Escalation: escalation}, []string{"Options.Escalation", "LockOut"}},
		{"escalation over a store that resets and a source that writes lockouts", lacking{memory.New(), false, true}, pgSource,
			enforce.Options{Escalation: escalation}, nil},
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

// NewAuthThrottle (rlapi builds one over any counter store) refuses a
// store that cannot reset as New does.
func TestNewAuthThrottleNeedsReset(t *testing.T) {
	t.Parallel()
	_, err := enforce.NewAuthThrottle(lacking{memory.New(), true, false}, enforce.AuthThrottleOptions{})
	if err == nil || !strings.Contains(err.Error(), "Reset") {
		t.Fatalf("NewAuthThrottle over a store that cannot reset: %v, want an error naming Reset", err)
	}
	if _, err := enforce.NewAuthThrottle(lacking{memory.New(), true, false}, enforce.AuthThrottleOptions{MaxFailures: -1}); err != nil {
		t.Fatalf("NewAuthThrottle turned off over a store that cannot reset: %v, want it built (nothing counts)", err)
	}
}

// The file source cannot write lockouts and says so: New refuses
// escalation over it, naming the capability, and its LockOut answers
// enforce.ErrNotImplemented.
func TestEscalationRefusedOverAFileSource(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rlctl.yaml")
	if err := os.WriteFile(path, []byte("definitions:\n  - {axis: target, entity_type: mcp_server, name: s, window_seconds: 60, max_requests: 5}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := filesource.New(path, filesource.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if src.Capabilities().LockOut {
		t.Fatal("the file source declares it writes lockouts")
	}
	if _, err := src.LockOut(t.Context(), enforce.Lockout{SubjectType: "user", Subject: "alice", Until: time.Now().Add(time.Hour)}); !errors.Is(err, enforce.ErrNotImplemented) {
		t.Errorf("LockOut: %v, want enforce.ErrNotImplemented", err)
	}
	_, err = enforce.New(t.Context(), enforce.Options{Counters: memory.New(), Source: src, SweepInterval: -1,
		Escalation: &enforce.EscalationOptions{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute}})
	if err == nil || !strings.Contains(err.Error(), "LockOut") || !strings.Contains(err.Error(), "filesource") {
		t.Fatalf("New with escalation over a file source: %v, want a refusal naming LockOut and the source", err)
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
