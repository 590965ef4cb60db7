package escalation_test

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
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/enforce/filesource"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// lacking is a counter store that declares Reset missing or not (and
// answers enforce.ErrNotImplemented from it when missing), as a store of a
// gateway's own may: what New must refuse to build on.
type lacking struct {
	enforce.CounterStore
	reset bool
}

func (s lacking) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{GiveBack: true, Reset: s.reset}
}

func (s lacking) Reset(ctx context.Context, gates []enforce.CounterGate, now, deadline time.Time) error {
	if !s.reset {
		return fmt.Errorf("lacking: %w", enforce.ErrNotImplemented)
	}
	return s.CounterStore.Reset(ctx, gates, now, deadline)
}

func (lacking) BackendName() string { return "lacking" }

var policy = escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute}

// New refuses a counter store or a source that cannot do what escalation
// needs, with a message naming the capability, instead of running with
// lockouts silently off; over stores that declare them it builds, and an
// Enforcer observed by it starts.
func TestNewRefusesWhatTheSeamsCannotDo(t *testing.T) {
	t.Parallel()
	pgSource := func(t *testing.T) enforce.Source { return postgres.NewSource(pgtest.NewStore(t).Pool()) }
	static := func(*testing.T) enforce.Source {
		return enforcetest.StaticSource(enforce.State{Definitions: enforcetest.Sentinels()})
	}
	for _, c := range []struct {
		name     string
		counters enforce.CounterStore
		source   func(*testing.T) enforce.Source
		want     []string // in the error; none: New builds
	}{
		{"escalation over a store that cannot reset", lacking{memory.New(), false}, pgSource, []string{"escalation", "Reset", "lacking"}},
		{"escalation over a source that cannot write lockouts", memory.New(), static, []string{"escalation", "LockOut"}},
		{"escalation over a store that resets and a source that writes lockouts", lacking{memory.New(), true}, pgSource, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src := c.source(t)
			esc, err := escalation.New(src, c.counters, policy, escalation.Opts{})
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("New: %v, want it to build", err)
				}
				e, err := enforce.New(t.Context(), enforce.Options{Counters: c.counters, Source: src, SweepInterval: -1,
					Observers: []enforce.Observer{esc}})
				if err != nil {
					t.Fatalf("enforce.New observed by escalation: %v, want it to start", err)
				}
				e.Close()
				return
			}
			if err == nil {
				t.Fatalf("New built; want a refusal naming %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v; want it to name %q", err, w)
				}
			}
		})
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
	_, err = escalation.New(src, memory.New(), policy, escalation.Opts{})
	if err == nil || !strings.Contains(err.Error(), "LockOut") || !strings.Contains(err.Error(), "filesource") {
		t.Fatalf("escalation over a file source: %v, want a refusal naming LockOut and the source", err)
	}
}

// Escalation lockouts are written through the Source: New refuses them
// over a Source that cannot write one, naming what is missing, instead of
// running with lockouts silently off.
func TestEscalationNeedsALockWriter(t *testing.T) {
	t.Parallel()
	_, err := escalation.New(enforcetest.StaticSource(enforce.State{Definitions: enforcetest.Sentinels()}), memory.New(), policy, escalation.Opts{})
	if err == nil || !strings.Contains(err.Error(), "LockOut capability") {
		t.Fatalf("escalation over a source that cannot write lockouts: %v, want an error naming the LockOut capability", err)
	}
}

// A lockout that starts is recorded in the record of violations the
// Escalator is given (kind lockout_started, severity high, the definition
// that reached the count), once.
func TestLockoutsAreRecorded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, escalation.Policy{After: 2, Within: 5 * time.Minute, Lockout: 15 * time.Minute}, escalation.Opts{})
	f.Def(callerGroup("free", 60, ptr(1), nil))
	f.Member(ratelimit.SubjectUser, "alice", "free")
	for range 3 {
		f.Check(user("alice", "srv"))
	}
	f.rec.Flush(context.Background())
	rows, err := f.Store.ListEvents(context.Background(), store.EventFilter{Kind: ratelimit.EventLockoutStarted})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Subject != "user:alice" || rows[0].Severity != "high" || rows[0].DefinitionID != "caller:group:free:60" || rows[0].Count != 1 {
		t.Errorf("lockout_started rows %+v, want one of user:alice, high, caller:group:free:60", rows)
	}
}
