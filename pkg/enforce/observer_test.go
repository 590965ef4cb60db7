package enforce_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// watcher is an Observer that keeps what it was told and answers what
// answer says (nil: nothing).
type watcher struct {
	mu     sync.Mutex
	seen   []enforce.Observation
	answer func(enforce.Observation) enforce.Verdict
}

func (w *watcher) Name() string { return "watcher" }

func (w *watcher) Observe(_ context.Context, o enforce.Observation) enforce.Verdict {
	w.mu.Lock()
	w.seen = append(w.seen, o)
	answer := w.answer
	w.mu.Unlock()
	if answer == nil {
		return enforce.Verdict{}
	}
	return answer(o)
}

func (w *watcher) reasons() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, o := range w.seen {
		out = append(out, o.Decision.Reason+" "+o.Caller)
	}
	return out
}

// Observers are told of the refusals by the core's own rules, and of
// nothing else: a throttle of Check (with the gate that decided, the
// caller and the subject a lockout would quarantine), a quarantine denial
// of Check or Peek; not an allowed call, not a Peek's throttle.
func TestObserversSeeTheRefusals(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	f := newMemFixtureOpts(t, enforce.Options{Observers: []enforce.Observer{w}}, callerGroup("free", 60, ptr(1), nil))
	f.Member(ratelimit.SubjectUser, "alice", "free")
	f.Member(ratelimit.SubjectUser, "mallory", ratelimit.GroupQuarantineCallers)
	alice := user("alice", "srv")
	alice.ClientIP = "203.0.113.7"
	if d := f.Check(alice); !d.Allowed {
		t.Fatalf("first call: %+v", d)
	}
	if got := w.reasons(); len(got) != 0 {
		t.Fatalf("an allowed call was observed: %v", got)
	}
	if d, err := f.E.Peek(context.Background(), alice); err != nil || d.Reason != enforce.ReasonThrottled {
		t.Fatalf("peek: %+v %v, want throttled", d, err)
	}
	if d := f.Check(alice); d.Reason != enforce.ReasonThrottled {
		t.Fatalf("second call: %+v, want throttled", d)
	}
	mallory := user("mallory", "srv")
	f.Check(mallory)
	if _, err := f.E.Peek(context.Background(), mallory); err != nil {
		t.Fatal(err)
	}
	want := []string{"throttled user:alice", "quarantined user:mallory", "quarantined user:mallory"}
	if got := w.reasons(); !slices.Equal(got, want) {
		t.Fatalf("observed %v, want %v", got, want)
	}
	o := w.seen[0]
	if o.Gate.DefinitionID != "caller:group:free:60" || o.Target != "srv" || o.IPKey != "203.0.113.7" || o.Admin ||
		o.SubjectType != ratelimit.SubjectUser || o.Subject != "alice" || len(o.Decision.Denied) != 1 || !o.Now.Equal(f.Clock.Now()) {
		t.Errorf("the throttle's observation: %+v", o)
	}
	if q := w.seen[1]; q.Decision.QuarantineScope != "caller" || q.Target != "srv" {
		t.Errorf("the quarantine's observation: %+v", q)
	}
}

// A verdict's decision is answered instead of the core's; a lockout it
// reports refuses the subject's next calls locked-out at once, though the
// source never holds it, until the snapshot would have (5 s); an error is
// counted under the observer's name.
func TestObserverVerdicts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	w := &watcher{}
	answered := false // the first throttle only (the observer runs under the decisions, one at a time here)
	w.answer = func(o enforce.Observation) enforce.Verdict {
		if o.Decision.Reason != enforce.ReasonThrottled || answered {
			return enforce.Verdict{}
		}
		answered = true
		l := enforce.Lockout{SubjectType: o.SubjectType, Subject: o.Subject, Now: o.Now, Until: o.Now.Add(time.Minute),
			Definition: o.Gate.DefinitionID, Count: 1, Reason: enforce.LockoutReasonPrefix + "test"}
		d := o.Decision
		d.Reason, d.RetryAfter, d.LockoutRemaining = enforce.ReasonLockedOut, time.Minute, time.Minute
		return enforce.Verdict{Decision: &d, Lockout: &l, Err: errors.New("something the observer could not do")}
	}
	// The limit is everyone's, so no membership is written: a membership's
	// change notice would reload alice's membership whenever it came, and
	// such a reload rightly forgets the lockout the static source never
	// holds (on a loaded machine, before the checks below).
	all := callerGroup("all", 60, ptr(1), nil)
	all.Everyone = true
	f := newMemFixtureOpts(t, enforce.Options{Observers: []enforce.Observer{w}, Registerer: reg}, all)
	f.Check(user("alice", "srv"))
	if d := f.Check(user("alice", "srv")); d.Reason != enforce.ReasonLockedOut || d.LockoutRemaining != time.Minute {
		t.Fatalf("the throttle the observer replaced: %+v, want its locked-out", d)
	}
	f.Clock.Advance(4 * time.Second)
	if d := f.Check(user("alice", "elsewhere")); d.Reason != enforce.ReasonLockedOut || d.LockoutRemaining != 56*time.Second {
		t.Errorf("the next call, 4 s later: %+v, want locked-out for 56s", d)
	}
	if d := f.Check(user("bob", "elsewhere")); !d.Allowed {
		t.Errorf("another caller: %+v, want allowed", d)
	}
	f.Clock.Advance(time.Second)
	if d := f.Check(user("alice", "elsewhere")); d.Reason != enforce.ReasonThrottled {
		t.Errorf("5 s later, the lockout nowhere in the source: %+v, want it forgotten (throttled by her own limit)", d)
	}
	if got := series(t, reg, "rlctl_enforce_errors_total"); !slices.Contains(got, "kind=watcher 1") {
		t.Errorf("rlctl_enforce_errors_total: %v, want kind=watcher 1", got)
	}
	if got := series(t, reg, "rlctl_enforce_checks_total"); !slices.Contains(got, "outcome=lockout_started 1") {
		t.Errorf("rlctl_enforce_checks_total: %v, want outcome=lockout_started 1", got)
	}
}
