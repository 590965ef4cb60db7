package enforce

import (
	"context"
	"time"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce/internal/eventlog"
	"github.com/rlctl/rlctl/pkg/enforce/internal/metrics"
	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Observers act on what the core decides without being part of the
// decision: the record of violations (pkg/enforce/violations) and
// escalation lockouts (pkg/enforce/escalation) are observers, and the core
// imports neither. The core calls each of Options.Observers, in order, at
// one point (Enforcer.observed), with every decision that refuses a call
// by a rule of its own:
//
//   - a throttle Check made (ReasonThrottled; Decision.Denied holds the
//     gates without room). A Peek consumed nothing and is not observed;
//   - a quarantine denial, of Check or Peek (ReasonQuarantined;
//     Decision.QuarantineScope says caller or target): the call is
//     refused either way.
//
// Allowed calls are not observed, so the hot path of the calls that pass
// pays nothing for observers; nor are the refusals that are not the
// core's rules (locked out, auth locked, a fail policy, overload).
//
// An observer answers a Verdict. It may replace the decision (escalation
// answers the throttle that reaches its count locked-out, in the same
// call), and it may report an escalation lockout it wrote through
// Source.LockOut: the core then refuses the locked subject's calls
// (ReasonLockedOut) at once, before its snapshot holds the lockout, logs
// the lockout in its aggregated log and counts it in
// rlctl_enforce_checks_total{outcome="lockout_started"}.

// Observer is told of the decisions that refuse a call (see above). Every
// method is mandatory. Observe runs on the decision's path: it must be
// quick, or bound what it waits for by ctx and a deadline of its own.
type Observer interface {
	// Name labels the observer's failures (Verdict.Err) in
	// rlctl_enforce_errors_total{kind}: escalation, violations.
	Name() string
	// Observe is told of one refusal and answers what the core does about
	// it.
	Observe(ctx context.Context, o Observation) Verdict
}

// Observation is one decision that refused a call, with what the core
// knew of the call when it decided.
type Observation struct {
	Call Call
	// Decision is the core's own, whatever an observer before this one
	// answered.
	Decision Decision
	// Now is the decision's time, by the Enforcer's clock.
	Now time.Time
	// Caller is who the call's own counters count: user:<name>,
	// agent:<client id>, or ip:<key> for an anonymous call with a client
	// address; "" when none (a descriptor call without an identity).
	Caller string
	// IPKey is the call's client address as counters key it (IPv4 by the
	// address, IPv6 by its prefix, Options.IPv6Prefix); "" without one.
	IPKey string
	// Target is the call's target name as definitions and memberships
	// name it (normalized when its type is known).
	Target string
	// Admin: the caller is an administrator (its caller limits and
	// quarantines do not apply to it).
	Admin bool
	// Gate is, for a throttle, the gate the decision describes: of
	// Decision.Denied, the first whose wait is longest.
	Gate Gate
	// SubjectType and Subject name the membership a lockout of the call's
	// caller quarantines (LockoutSubject): "" when there is none.
	SubjectType, Subject string
}

// Verdict is what an observer answers; the zero Verdict changes nothing.
type Verdict struct {
	// Decision, when not nil, is answered instead of the decision
	// observed (when several observers replace it, the last one wins).
	Decision *Decision
	// Lockout, when not nil, is an escalation lockout the observer wrote
	// through Source.LockOut of the call's subject (Observation.
	// SubjectType and Subject). Until the Enforcer's snapshot holds it,
	// the core refuses that subject's calls locked-out as the snapshot
	// will; it logs the lockout (lockout_started) and counts it.
	Lockout *Lockout
	// Err is a failure of the observer's own (it has logged it), counted
	// in rlctl_enforce_errors_total under the observer's Name.
	Err error
}

// LockoutSubject is the membership a lockout of the call's caller
// quarantines, and whose violations an escalation counts: its agent
// (client), else its user, else, for an anonymous call, its network (the
// client address's /32, or its IPv6 prefix of ipv6Prefix bits:
// network:203.0.113.7/32). "" when the call has none of them.
func LockoutSubject(c Call, ipv6Prefix int) (subjectType, subject string) {
	switch {
	case c.ClientID != "":
		return ratelimit.SubjectClient, c.ClientID
	case c.Username != "":
		return ratelimit.SubjectUser, c.Username
	}
	if p := clientip.Network(clientAddr(c.ClientIP), ipv6Prefix); p.IsValid() {
		return ratelimit.SubjectNetwork, p.String()
	}
	return "", ""
}

// LongestWait is the first of gates (at least one) whose wait is longest:
// the gate a throttle's RetryAfter and headline describe. A gate's wait is
// its RetryAfter, or (without one) the time to its Reset.
func LongestWait(gates []Gate, now time.Time) Gate { return longestWait(gates, now) }

// observing tells the Observers (Options.Observers) of the decisions
// that refuse a call by a rule of the core, and takes what they answer: a
// decision in its stead, or an escalation lockout to enforce at once.
type observing struct {
	observers  []Observer
	metrics    *metrics.Metrics
	events     *eventlog.Log
	ipv6Prefix int
	// recent are the lockouts observers wrote, refused until a reload
	// started after them reads them back; reloads is how many have
	// started.
	recent  *snapshots.Recent
	reloads func() uint64
}

// observed tells the observers of d, the decision for c, when it refuses c
// by a rule of the core (a consuming throttle, or a quarantine), and
// returns the decision to answer. It is the one point observers are called
// from.
func (ob *observing) observed(ctx context.Context, c Call, d Decision, v *callView, consume bool, now time.Time) Decision {
	if len(ob.observers) == 0 {
		return d
	}
	switch {
	case d.Reason == ReasonQuarantined:
	case d.Reason == ReasonThrottled && consume && len(d.Denied) > 0:
	default:
		return d
	}
	o := Observation{Call: c, Decision: d, Now: now, Caller: eventCaller(c, ob.ipv6Prefix), IPKey: ipKeyOf(c, ob.ipv6Prefix),
		Target: v.targetName, Admin: v.admin}
	if d.Reason == ReasonThrottled {
		o.Gate = longestWait(d.Denied, now)
	}
	o.SubjectType, o.Subject = LockoutSubject(c, ob.ipv6Prefix)
	out := d
	for _, obs := range ob.observers {
		vd := obs.Observe(ctx, o)
		if vd.Err != nil {
			ob.metrics.Errors.WithLabelValues(obs.Name()).Inc()
		}
		if l := vd.Lockout; l != nil {
			// Refused until the snapshot holds it (internal/snapshot, recent.go),
			// logged and counted as the core's own lockouts are.
			ob.recent.Add(ratelimit.MembershipID(l.SubjectType, l.Subject), l.Until, now, ob.reloads())
			ob.metrics.Checks.WithLabelValues("lockout_started").Inc()
			ob.events.Record(eventlog.Event{Reason: EventLockoutStarted, Username: c.Username, ClientID: c.ClientID, TargetType: c.TargetType,
				Target: c.TargetName, Caller: o.Caller, Gate: l.Definition, Limit: int64(l.Count), RetryAfter: l.Until.Sub(l.Now), Until: l.Until})
		}
		if vd.Decision != nil {
			out = *vd.Decision
		}
	}
	return out
}
