package enforce

import (
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/internal/eventlog"
	"github.com/rlctl/rlctl/pkg/enforce/internal/metrics"
	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// stops are the quarantines and escalation lockouts that refuse a call
// before its gates (steps 1 and 2 of a decision): finding the one that
// applies, the same for a decision and for Explain, and the decision it
// makes, counted and logged.
type stops struct {
	metrics    *metrics.Metrics
	events     *eventlog.Log
	ipv6Prefix int
	// recent are the lockouts this replica's observers wrote, until its
	// snapshot holds them.
	recent *snapshots.Recent
}

// decide is the decision of a call that s (not stopNone) refuses, counted
// and logged. The core finds s first (of) and decides it only once a
// Guard's refusal found meanwhile has not decided the call instead.
// (Returning a closure over the call instead cost a decision an
// allocation of the whole Call: the captured parameter escapes on every
// path.)
func (st *stops) decide(s stopCause, c Call, v *callView, now time.Time) Decision {
	switch s.kind {
	case stopTarget:
		return st.quarantined("target", c.TargetType, c, v.targetName)
	case stopCaller:
		return st.quarantined("caller", s.subjectType, c, v.targetName)
	}
	return st.lockedOut(c, s.m, v.targetName, now)
}

// stopKind is what refuses a call before its gates (stops.of).
type stopKind uint8

const (
	stopNone stopKind = iota
	stopTarget
	stopCaller
	stopLockout
)

// stopCause is the quarantine or lockout that refuses a call before its
// gates: its kind, the subject type of a caller quarantine (user, client,
// team, network) and the membership that holds it.
type stopCause struct {
	kind        stopKind
	subjectType string
	m           plan.Member
}

// of finds the quarantine or escalation lockout that refuses the call
// before its gates, in the order decisions apply them; it counts and logs
// nothing, so that Explain reads the same rule a decision does.
func (st *stops) of(snap *snapshot, v *callView, c Call, anonymous bool, now time.Time) stopCause {
	// 1. Target quarantine: for everyone, administrators included.
	if snap.TargetsOn && v.targetKnown && c.TargetType != "" && v.target.ok && v.target.m.QuarantinedAt(now) {
		return stopCause{kind: stopTarget, subjectType: c.TargetType, m: v.target.m}
	}
	if v.admin {
		return stopCause{}
	}
	// 2. Caller quarantine: not for administrators. The callers' sentinel
	// switches the operators' quarantines; an escalation lockout is the
	// enforcer's own answer to a caller's violations and holds without it
	// (docs/operations.md, "Escalation lockouts").
	for i, r := range v.callers {
		if r.ok && r.m.QuarantinedAt(now) {
			if r.m.Lockout {
				return stopCause{kind: stopLockout, m: r.m}
			}
			if !snap.CallersOn {
				continue
			}
			return stopCause{kind: stopCaller, subjectType: callerSubjectTypes[i], m: r.m}
		}
	}
	if snap.CallersOn && v.network.ok && v.network.m.QuarantinedAt(now) && !v.network.m.Lockout {
		return stopCause{kind: stopCaller, subjectType: ratelimit.SubjectNetwork, m: v.network.m}
	}
	if anonymous {
		if m, ok := v.ipLockout(now); ok {
			return stopCause{kind: stopLockout, m: m}
		}
	}
	// A lockout this replica has just written, before its change notice
	// brings it into the snapshot.
	if m, ok := st.recentlyLockedOut(c, now); ok {
		return stopCause{kind: stopLockout, m: m}
	}
	return stopCause{}
}

// quarantined is the decision for a call refused by a quarantine of
// scope (caller or target) whose subject has entityType.
func (st *stops) quarantined(scope, entityType string, c Call, target string) Decision {
	st.metrics.Checks.WithLabelValues("quarantined").Inc()
	st.metrics.QuarantineDenied.WithLabelValues(scope, entityType).Inc()
	st.events.Record(eventlog.Event{Reason: eventlog.Quarantined, Scope: scope, Username: c.Username, ClientID: c.ClientID,
		TargetType: c.TargetType, Target: target, Caller: eventCaller(c, st.ipv6Prefix)})
	return Decision{Allowed: false, Reason: ReasonQuarantined, QuarantineScope: scope}
}

// lockedOut is the decision for a caller under an escalation lockout.
func (st *stops) lockedOut(c Call, m plan.Member, target string, now time.Time) Decision {
	st.metrics.Checks.WithLabelValues("locked_out").Inc()
	left := m.QuarantineExpireAt.Sub(now)
	st.events.Record(eventlog.Event{Reason: eventlog.LockedOut, Username: c.Username, ClientID: c.ClientID, TargetType: c.TargetType,
		Target: target, Caller: eventCaller(c, st.ipv6Prefix), RetryAfter: left, Until: m.QuarantineExpireAt})
	return Decision{Allowed: false, Reason: ReasonLockedOut, RetryAfter: retryAfter(left), LockoutRemaining: retryAfter(left)}
}

// recentlyLockedOut is the end of a lockout of the call's caller that an
// observer of this replica wrote (Verdict.Lockout) and its snapshot may
// not hold yet (internal/snapshot, recent.go).
func (st *stops) recentlyLockedOut(c Call, now time.Time) (plan.Member, bool) {
	if st.recent.Empty() {
		return plan.Member{}, false
	}
	subjectType, subject := LockoutSubject(c, st.ipv6Prefix)
	if subject == "" {
		return plan.Member{}, false
	}
	until, ok := st.recent.Find(ratelimit.MembershipID(subjectType, subject), now)
	return plan.Member{Quarantined: true, QuarantineExpireAt: until, Lockout: true}, ok
}
