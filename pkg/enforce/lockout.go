package enforce

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Escalation lockouts: a caller throttled After times
// within Within is locked out for Lockout. The violations are a
// sliding-window counter in the counter store like any other (key
// v|<window>|<caller>), so every replica counts toward one total; the
// lockout is an automatic quarantine of the caller (user or client) with
// an expiry and a reason naming the definition and the count, written
// through Source.LockOut (pkg/enforce/postgres: one audited
// transaction), so it is shared, listed by `rlctl quarantine list`,
// removable by an operator and never applied to an administrator.
//
// An anonymous caller (ip:<key>) is locked out as a quarantine of its
// network subject: the address's /32, or its IPv6 prefix (Options.
// IPv6Prefix, /64 by default), network:203.0.113.7/32. Such a lockout
// refuses anonymous calls from the address only (a user or client
// calling from it is its own caller, with its own count), and a network
// membership that holds nothing but a lockout is kept apart from the
// networks' longest-prefix match: it never hides the groups or the
// quarantine of an operator's wider network holding the address, even
// once it has expired.

// EscalationOptions turn on escalation lockouts (Options.Escalation).
type EscalationOptions struct {
	// After is how many violations (throttled calls) lock a caller out
	// (>= 1).
	After int
	// Within is the sliding window they are counted in (whole seconds,
	// 1s to 24h).
	Within time.Duration
	// Lockout is how long the caller is locked out (whole seconds, 1s to
	// 30 days).
	Lockout time.Duration
}

// CheckEscalation checks escalation settings; its errors name the setting.
func CheckEscalation(o EscalationOptions) error {
	if o.After < 1 || o.After > 1_000_000 {
		return fmt.Errorf("after: must be between 1 and 1000000 violations (got %d)", o.After)
	}
	if o.Within < time.Second || o.Within > 24*time.Hour || o.Within%time.Second != 0 {
		return fmt.Errorf("within: must be whole seconds between 1s and 24h (got %s)", o.Within)
	}
	if o.Lockout < time.Second || o.Lockout > 30*24*time.Hour || o.Lockout%time.Second != 0 {
		return fmt.Errorf("lockout: must be whole seconds between 1s and 720h (got %s)", o.Lockout)
	}
	return nil
}

// LockoutReasonPrefix starts the reason of every escalation lockout; a
// caller quarantine with an expiry whose reason starts with it is answered
// ReasonLockedOut (429, Retry-After, X-Lockout-Remaining) rather than as a
// quarantine (403).
const LockoutReasonPrefix = "lockout: "

// ReasonLockedOut: the caller is locked out by an escalation lockout;
// RetryAfter and LockoutRemaining say for how long.
const ReasonLockedOut = "locked-out"

// Event kinds of escalation lockouts (events.go).
const (
	EventLockoutStarted = "lockout_started"
	eventLockedOut      = "locked_out"
)

// isLockout reports whether m is an escalation lockout.
func isLockout(m ratelimit.Membership) bool {
	return m.QuarantineExpiresAt != nil && strings.HasPrefix(m.QuarantineReason, LockoutReasonPrefix)
}

// lockedOut is the decision for a caller under an escalation lockout.
func (e *Enforcer) lockedOut(c Call, m member, target string, now time.Time) Decision {
	e.metrics.checks.WithLabelValues("locked_out").Inc()
	left := m.quarantineExpireAt.Sub(now)
	e.events.record(event{reason: eventLockedOut, username: c.Username, clientID: c.ClientID, targetType: c.TargetType,
		target: target, caller: e.eventCaller(c), retryAfter: left, until: m.quarantineExpireAt})
	return Decision{Allowed: false, Reason: ReasonLockedOut, RetryAfter: retryAfter(left), LockoutRemaining: retryAfter(left)}
}

// ipLockoutOnly reports whether m is a network membership holding nothing
// but an escalation lockout (an anonymous caller's, expired or not): the
// snapshot keeps it with the other memberships, by id, not among the
// networks.
func ipLockoutOnly(m ratelimit.Membership) bool {
	return m.SubjectType == ratelimit.SubjectNetwork && isLockout(m) &&
		len(m.Groups) == 1 && m.Groups[0] == ratelimit.GroupQuarantineCallers
}

// countsTowardLockout reports whether a throttle by g is its caller's own
// violation. By default, a bucket kept for the caller alone counts: its
// caller bucket, caller_target buckets (the per-caller buckets of routes
// and tools among them), and for an anonymous caller, whose identity is
// its address, the buckets kept per client address. Buckets others share
// do not: a target's own limit, a route's all-callers bucket, per-team and
// shared buckets, descriptors, and a per-address bucket when the caller
// has an identity of its own (everyone behind one NAT shares it). A
// definition's counts_toward_lockout, when set, decides instead.
func (g Gate) countsTowardLockout(anonymous bool) bool {
	if g.lockout != nil {
		return *g.lockout
	}
	k, err := ParseCounterKey(g.key)
	if err != nil {
		return false
	}
	holder := k.Caller
	switch k.Kind {
	case KindCaller, KindCallerTarget:
		// A route's per-team bucket is kept for team:<name>, its
		// per-address one for ip:<key>.
	case KindPer:
		// Kept per ip:<key> or team:<name>; a shared bucket names no
		// subject.
		if !strings.HasPrefix(holder, CallerIP+":") {
			return false
		}
	default:
		return false
	}
	switch {
	case strings.HasPrefix(holder, CallerTeam+":"):
		return false
	case strings.HasPrefix(holder, CallerIP+":"):
		return anonymous
	}
	return true
}

// violator is the subject a call's violations count against and a lockout
// quarantines: its agent, else its user, else (anonymous) its network.
func (e *Enforcer) violator(c Call) (subjectType, subject string) {
	switch {
	case c.ClientID != "":
		return ratelimit.SubjectClient, c.ClientID
	case c.Username != "":
		return ratelimit.SubjectUser, c.Username
	}
	if p := clientip.Network(clientAddr(c.ClientIP), e.opts.IPv6Prefix); p.IsValid() {
		return ratelimit.SubjectNetwork, p.String()
	}
	return "", ""
}

// recentlyLockedOut is the end of a lockout of the call's caller that this
// replica wrote and its snapshot may not hold yet (lockout_recent.go).
func (e *Enforcer) recentlyLockedOut(c Call, now time.Time) (member, bool) {
	if e.recentLockouts.n.Load() == 0 {
		return member{}, false
	}
	subjectType, subject := e.violator(c)
	if subject == "" {
		return member{}, false
	}
	until, ok := e.recentLockouts.find(ratelimit.MembershipID(subjectType, subject), now)
	return member{quarantined: true, quarantineExpireAt: until, lockout: true}, ok
}

// escalate counts a throttled call as a violation of its caller, and locks
// the caller out when it reaches the count. It returns the decision to
// answer instead (locked out) when it did.
func (e *Enforcer) escalate(ctx context.Context, c Call, d Decision, now time.Time) (Decision, bool) {
	o := e.opts.Escalation
	if o == nil || len(d.Denied) == 0 {
		return d, false
	}
	// Only a limit that is the caller's own counts: another caller's use
	// of a shared limit must not lock this one out.
	var own []Gate
	for _, g := range d.Denied {
		if g.countsTowardLockout(c.Username == "" && c.ClientID == "") {
			own = append(own, g)
		}
	}
	if len(own) == 0 {
		return d, false
	}
	subjectType, subject := e.violator(c)
	if subject == "" {
		return d, false
	}
	g := CounterGate{Key: ViolationCounter(int(o.Within/time.Second), ratelimit.MembershipID(subjectType, subject)).String(),
		Algorithm: AlgorithmSlidingWindow, Window: o.Within, Limit: int64(o.After), Enforce: true}
	res, err := e.batcher.take(ctx, TakeRequest{Gates: []CounterGate{g}, Cost: 1, Consume: true, Now: now}, e.opts.BackendTimeout)
	if err != nil {
		e.metrics.errors.WithLabelValues("escalation").Inc()
		return d, false
	}
	st := res.States[0]
	remaining, _ := algorithm.Describe(algorithm.Gate{Algorithm: string(g.Algorithm), Window: g.Window, Limit: g.Limit},
		algorithm.State{Count: st.Count, Previous: st.Previous}, now)
	if res.Room[0] && remaining > 0 {
		return d, false
	}
	def := longestWait(own, now).DefinitionID
	l := Lockout{SubjectType: subjectType, Subject: subject, Now: now, Until: now.Add(o.Lockout), Definition: def, Count: o.After,
		Reason: fmt.Sprintf("%s%d violations of %s within %s; locked out for %s", LockoutReasonPrefix, o.After, def, o.Within, o.Lockout)}
	lctx, cancel := context.WithTimeout(ctx, 4*e.opts.BackendTimeout)
	applied, err := e.source.LockOut(lctx, l)
	cancel()
	if err != nil {
		e.metrics.errors.WithLabelValues("escalation").Inc()
		e.log.Warn("escalation lockout could not be written", "caller", ratelimit.MembershipID(subjectType, subject), "definition", def, "err", err)
		return d, false
	}
	if !applied {
		return d, false // an administrator, or quarantined already
	}
	e.recentLockouts.add(ratelimit.MembershipID(subjectType, subject), l.Until, now, e.reloads.Load())
	// The violations that locked it are spent: after the lockout the
	// caller starts afresh (New refuses escalation over a store that
	// cannot reset).
	rctx, cancel := context.WithTimeout(ctx, e.opts.BackendTimeout)
	if err := e.counters.Reset(rctx, []CounterGate{g}, now, time.Now().Add(e.opts.BackendTimeout)); err != nil {
		e.metrics.errors.WithLabelValues("escalation").Inc()
		e.log.Warn("escalation lockout: could not clear the violation count", "caller", ratelimit.MembershipID(subjectType, subject), "err", err)
	}
	cancel()
	e.metrics.checks.WithLabelValues("lockout_started").Inc()
	e.events.record(event{reason: EventLockoutStarted, username: c.Username, clientID: c.ClientID, targetType: c.TargetType,
		target: c.TargetName, caller: e.eventCaller(c), gate: def, limit: int64(o.After), retryAfter: o.Lockout, until: l.Until})
	if e.opts.OnLockout != nil {
		e.opts.OnLockout(l)
	}
	d.Reason, d.RetryAfter, d.LockoutRemaining = ReasonLockedOut, retryAfter(o.Lockout), retryAfter(o.Lockout)
	return d, true
}
