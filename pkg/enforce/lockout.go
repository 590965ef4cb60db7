package enforce

import (
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/internal/eventlog"
	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Lockouts as the core reads them. An escalation lockout (written by
// pkg/enforce/escalation, an observer of decisions, through
// Source.LockOut) is a quarantine of a caller (user or client) with an
// expiry and a reason starting with LockoutReasonPrefix: the core answers
// it ReasonLockedOut (429, Retry-After, X-Lockout-Remaining) rather than
// as a quarantine (403), and it holds whatever the callers' quarantine
// sentinel says.
//
// An anonymous caller (ip:<key>) is locked out as a quarantine of its
// network subject (LockoutSubject): the address's /32, or its IPv6 prefix
// (Options.IPv6Prefix, /64 by default), network:203.0.113.7/32. Such a
// lockout refuses anonymous calls from the address only (a user or client
// calling from it is its own caller), and a network membership that holds
// nothing but a lockout is kept apart from the networks' longest-prefix
// match: it never hides the groups or the quarantine of an operator's
// wider network holding the address, even once it has expired.

// LockoutReasonPrefix starts the reason of every escalation lockout; a
// caller quarantine with an expiry whose reason starts with it is answered
// ReasonLockedOut (429, Retry-After, X-Lockout-Remaining) rather than as a
// quarantine (403).
const LockoutReasonPrefix = snapshots.LockoutReasonPrefix

// ReasonLockedOut: the caller is locked out by an escalation lockout;
// RetryAfter and LockoutRemaining say for how long.
const ReasonLockedOut = "locked-out"

// EventLockoutStarted is the event attribute of the log line an
// escalation lockout writes when it starts.
const EventLockoutStarted = eventlog.LockoutStarted

// lockedOut is the decision for a caller under an escalation lockout.
func (e *Enforcer) lockedOut(c Call, m plan.Member, target string, now time.Time) Decision {
	e.metrics.Checks.WithLabelValues("locked_out").Inc()
	left := m.QuarantineExpireAt.Sub(now)
	e.events.Record(eventlog.Event{Reason: eventlog.LockedOut, Username: c.Username, ClientID: c.ClientID, TargetType: c.TargetType,
		Target: target, Caller: eventCaller(c, e.opts.IPv6Prefix), RetryAfter: left, Until: m.QuarantineExpireAt})
	return Decision{Allowed: false, Reason: ReasonLockedOut, RetryAfter: retryAfter(left), LockoutRemaining: retryAfter(left)}
}

// recentlyLockedOut is the end of a lockout of the call's caller that an
// observer of this replica wrote (Verdict.Lockout) and its snapshot may
// not hold yet (internal/snapshot, recent.go).
func (e *Enforcer) recentlyLockedOut(c Call, now time.Time) (plan.Member, bool) {
	if e.recentLockouts.Empty() {
		return plan.Member{}, false
	}
	subjectType, subject := LockoutSubject(c, e.opts.IPv6Prefix)
	if subject == "" {
		return plan.Member{}, false
	}
	until, ok := e.recentLockouts.Find(ratelimit.MembershipID(subjectType, subject), now)
	return plan.Member{Quarantined: true, QuarantineExpireAt: until, Lockout: true}, ok
}
