package enforce

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/internal/eventlog"
	"github.com/rlctl/rlctl/pkg/enforce/internal/metrics"
)

// A Guard screens every call before anything else of its decision
// (Options.Guard): a feature that refuses some client addresses outright,
// whoever they claim to be, administrators included. pkg/auththrottle's
// Throttle is one: an address locked out for failed authentications is
// refused auth-locked before its credentials matter.
//
// The core calls it at one point, documented here: the first step of a
// decision, once the routes' exemptions and the master switch have let
// the call through, before quarantines and gates, for a call with a valid
// client address. Screen answers from memory. When it cannot (the guard
// must ask the counter store), its Question rides in the round trip of the
// call's counters as a peek taken just before them, so that a guard costs
// a decision no round trip of its own: when the answer refuses the call,
// what the call took is given back (ReturnUnused), and the only cost of
// asking late is that another call may, for that round trip, see counts a
// refused call holds; it may be refused, never admitted past a limit. A
// decision that makes no round trip to share (it ends before its gates,
// has none, or a lease decides it), a store that cannot give back, or a
// round trip that failed, has the guard ask on its own first
// (Question.Ask). docs/design/lockouts.md, "Asked in the call's round
// trip", measures what riding saves.
type Guard interface {
	// Name labels the guard's store failures in
	// rlctl_enforce_errors_total (kind).
	Name() string
	// Bind is called once, by New, before any call: the guard reports
	// through host what it decides outside a decision. A guard bound
	// already refuses (one guard serves one Enforcer).
	Bind(host GuardHost) error
	// Screen screens call c from its client address ip (valid), from
	// memory only.
	Screen(c Call, ip netip.Addr) Screening
	// Changed is told of every change notice of a table the snapshot
	// does not hold (TableAuthLockouts), and of Change{Table:
	// TableAuthLockouts, All: true} when the change stream reconnects
	// (notices sent meanwhile are lost).
	Changed(ch Change)
}

// Screening is a Guard's answer about one call: refused, to be asked of
// the store (Question), or neither (the call goes on).
type Screening struct {
	Refused bool
	Refusal Refusal
	// Question, when not nil, is what the store must answer before the
	// call can pass.
	Question *Question
}

// Question is what a Guard asks the counter store about a call.
type Question struct {
	// Request is a peek (Consume false) the core sends just before the
	// call's own request, in the same round trip.
	Request TakeRequest
	// Answer reads the store's answer to Request: refused or not.
	Answer func(TakeResult) (Refusal, bool)
	// Ask asks on its own round trip instead. A store that cannot say
	// leaves the call to the rest of the decision (the guard counts the
	// failure through its host).
	Ask func(ctx context.Context) (Refusal, bool)
}

// Refusal is a call a Guard refuses: its decision, the outcome it is
// counted under in rlctl_enforce_checks_total, and its event in the
// aggregated log (one line per kind and subject per interval).
type Refusal struct {
	Decision Decision
	Outcome  string
	Event    GuardEvent
}

// GuardEvent is a line of the aggregated log a Guard has the Enforcer
// write: Kind (the line's event attribute), the subject fields it is
// aggregated by, and Message and Attrs written after the event, its
// count and the interval. A kind the record of violations keeps
// (auth_lockout_started) is recorded there too, with Caller its subject
// and Limit its limit.
type GuardEvent struct {
	Kind, Message                          string
	Caller                                 string
	Username, ClientID, TargetType, Target string
	Limit                                  int64
	Attrs                                  []slog.Attr
}

// GuardHost is what an Enforcer lends its Guard (Guard.Bind).
type GuardHost interface {
	// Refused counts and logs a call the guard refused outside a
	// decision (a gateway asking before it verifies credentials), as
	// a decision's refusal is.
	Refused(Refusal)
	// Failed counts a store failure of the guard's.
	Failed()
	// Log writes ev to the aggregated log (and records it when its kind
	// is one the record of violations keeps).
	Log(ev GuardEvent)
}

// guarding is the core's side of its Guard (Options.Guard, nil for
// none): screening a call, asking the store what the Guard asks, and
// counting and logging what it refuses.
type guarding struct {
	guard    Guard
	counters CounterStore
	metrics  *metrics.Metrics
	events   *eventlog.Log
	log      *slog.Logger
	timeout  time.Duration
	// ride: a Guard's question may ride in the round trip of the call's
	// counters: the store can give back what the call took, and it never
	// decides in memory without a round trip (CounterCapabilities).
	ride bool
}

// guardHost is the Enforcer's GuardHost.
type guardHost struct{ g *guarding }

func (h guardHost) Refused(r Refusal) { h.g.refused(r) }
func (h guardHost) Failed()           { h.g.metrics.Errors.WithLabelValues(h.g.guard.Name()).Inc() }
func (h guardHost) Log(ev GuardEvent) { h.g.events.Record(guardEventOf(ev)) }

// guardEventOf is ev as the aggregated log keeps it.
func guardEventOf(ev GuardEvent) eventlog.Event {
	return eventlog.Event{Reason: ev.Kind, Message: ev.Message, Attrs: ev.Attrs, Caller: ev.Caller, Username: ev.Username,
		ClientID: ev.ClientID, TargetType: ev.TargetType, Target: ev.Target, Limit: ev.Limit}
}

// bind binds the Guard to g.
func (g *guarding) bind() error {
	if g.guard == nil {
		return nil
	}
	if err := g.guard.Bind(guardHost{g}); err != nil {
		return fmt.Errorf("enforce: Options.Guard: %w", err)
	}
	return nil
}

// refused counts and logs r, and is its decision.
func (g *guarding) refused(r Refusal) Decision {
	g.metrics.Checks.WithLabelValues(r.Outcome).Inc()
	g.events.Record(guardEventOf(r.Event))
	return r.Decision
}

// screen is the decision's first step: the Guard's screening of c from
// ip. A refusal decides the call; a question the store must answer is
// returned to ride in the call's round trip when it can (ride), else it
// is asked now.
func (g *guarding) screen(ctx context.Context, c Call, ip netip.Addr) (q *Question, d Decision, refused bool) {
	if g.guard == nil || !ip.IsValid() {
		return nil, Decision{}, false
	}
	s := g.guard.Screen(c, ip)
	switch {
	case s.Refused:
		return nil, g.refused(s.Refusal), true
	case s.Question == nil:
		return nil, Decision{}, false
	case g.ride:
		return s.Question, Decision{}, false
	}
	d, refused = g.settle(ctx, s.Question)
	return nil, d, refused
}

// settle asks q (nil: nothing to ask) on its own round trip, for a call
// that ends before its counters or whose round trip failed.
func (g *guarding) settle(ctx context.Context, q *Question) (Decision, bool) {
	if q == nil {
		return Decision{}, false
	}
	r, refused := q.Ask(ctx)
	if !refused {
		return Decision{}, false
	}
	return g.refused(r), true
}

// giveBack returns what an allowed call took (res, the answer to req)
// after the Guard refused it in the same round trip. A store that fails
// to take it back leaves it counted until the window ends or the tokens
// drip back: stricter, never looser.
func (g *guarding) giveBack(req TakeRequest, res TakeResult) {
	var rs []Return
	for i, cg := range req.Gates {
		if res.Room[i] { // an allowed call takes from every gate with room
			rs = append(rs, Return{Gate: cg, Units: req.Cost, Taken: req.Now, Now: req.Now})
		}
	}
	if len(rs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if err := g.counters.ReturnUnused(ctx, rs, deadline); err != nil {
		g.metrics.Errors.WithLabelValues(g.guard.Name()).Inc()
		g.log.Warn("guard: could not give back what a refused call took", "guard", g.guard.Name(), "gates", len(rs), "err", err)
	}
}

// changed tells the Guard of a change notice of a table the snapshot
// does not hold.
func (g *guarding) changed(ch Change) {
	if g.guard != nil {
		g.guard.Changed(ch)
	}
}
