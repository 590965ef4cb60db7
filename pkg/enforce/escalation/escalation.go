// Package escalation locks out callers that keep being throttled: an
// observer of the enforcement core's decisions (enforce.Observer). A
// caller throttled After times within Within is locked out for Lockout.
// The violations are a sliding-window counter in the counter store like
// any other (key v|<window>|<caller>), so every replica counts toward one
// total; the lockout is an automatic quarantine of the caller (user or
// client) with an expiry and a reason naming the definition and the count,
// written through Source.LockOut (pkg/enforce/postgres: one audited
// transaction), so it is shared, listed by `rlctl quarantine list`,
// removable by an operator and never applied to an administrator.
//
// An anonymous caller (ip:<key>) is locked out as a quarantine of its
// network subject (enforce.LockoutSubject): the address's /32, or its IPv6
// prefix, network:203.0.113.7/32. The core reads lockouts from its
// snapshot and answers them enforce.ReasonLockedOut; the call that reaches
// the count is answered so at once (the observer's Verdict replaces the
// throttle), and so are the caller's next calls on this replica before the
// lockout reaches its snapshot (Verdict.Lockout).
//
//	esc, err := escalation.New(source, counters, escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: 15 * time.Minute},
//		escalation.Opts{Record: rec})
//	e, err := enforce.New(ctx, enforce.Options{Source: source, Counters: counters, Observers: []enforce.Observer{rec, esc}})
package escalation

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Policy is when a caller is locked out and for how long.
type Policy struct {
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

// Check checks the policy; its errors name the setting.
func (p Policy) Check() error {
	if p.After < 1 || p.After > 1_000_000 {
		return fmt.Errorf("after: must be between 1 and 1000000 violations (got %d)", p.After)
	}
	if p.Within < time.Second || p.Within > 24*time.Hour || p.Within%time.Second != 0 {
		return fmt.Errorf("within: must be whole seconds between 1s and 24h (got %s)", p.Within)
	}
	if p.Lockout < time.Second || p.Lockout > 30*24*time.Hour || p.Lockout%time.Second != 0 {
		return fmt.Errorf("lockout: must be whole seconds between 1s and 720h (got %s)", p.Lockout)
	}
	return nil
}

// Recorder is where a lockout that started is recorded: the record of
// violations (pkg/enforce/violations's Recorder).
type Recorder interface {
	RecordEvent(ev ratelimit.Event) error
}

// Opts tune an Escalator; zero values take the defaults.
type Opts struct {
	// Record, when set, receives every lockout this Escalator wrote (kind
	// lockout_started).
	Record Recorder
	// OnLockout, when set, is told of every lockout this Escalator wrote.
	OnLockout func(enforce.Lockout)
	// BackendTimeout bounds each counter round trip (default 250 ms, as
	// the Enforcer's); writing a lockout gets four times as long.
	BackendTimeout time.Duration
	Logger         *slog.Logger
}

// Escalator is the escalation observer. It is safe for concurrent use.
type Escalator struct {
	source   enforce.Source
	counters enforce.CounterStore
	policy   Policy
	opts     Opts
}

// New builds an Escalator over source, which writes the lockouts, and
// counters, which count the violations (give it the Enforcer's). It
// refuses a source that does not declare LockOut and a store that does not
// declare Reset, naming the capability: escalation must never be silently
// off.
func New(source enforce.Source, counters enforce.CounterStore, p Policy, opts Opts) (*Escalator, error) {
	if source == nil || counters == nil {
		return nil, fmt.Errorf("escalation: a source and a counter store are required")
	}
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("escalation: %w", err)
	}
	if !source.Capabilities().LockOut {
		return nil, fmt.Errorf("escalation needs a Source with the LockOut capability (it writes the lockouts, as pkg/enforce/postgres's Source does); %T does not declare it", source)
	}
	if !counters.Capabilities().Reset {
		name := counters.BackendName()
		if name == "" {
			name = fmt.Sprintf("%T", counters)
		}
		return nil, fmt.Errorf("escalation needs a counter store with the Reset capability (an ended lockout's violation count is cleared); %s does not declare it", name)
	}
	if opts.BackendTimeout <= 0 {
		opts.BackendTimeout = 250 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Escalator{source: source, counters: counters, policy: p, opts: opts}, nil
}

// Name is the Escalator's name as an enforce.Observer: its failures are
// counted in rlctl_enforce_errors_total{kind="escalation"}.
func (x *Escalator) Name() string { return "escalation" }

// countsTowardLockout reports whether a throttle by g is its caller's own
// violation. By default, a bucket kept for the caller alone counts: its
// caller bucket, caller_target buckets (the per-caller buckets of routes
// and tools among them), and for an anonymous caller, whose identity is
// its address, the buckets kept per client address. Buckets others share
// do not: a target's own limit, a route's all-callers bucket, per-team and
// shared buckets, descriptors, and a per-address bucket when the caller
// has an identity of its own (everyone behind one NAT shares it). A
// definition's counts_toward_lockout, when set, decides instead.
func countsTowardLockout(g enforce.Gate, anonymous bool) bool {
	if counts, set := g.CountsTowardLockout(); set {
		return counts
	}
	k, err := counterkey.Parse(g.Key())
	if err != nil {
		return false
	}
	holder := k.Caller
	switch k.Kind {
	case counterkey.KindCaller, counterkey.KindCallerTarget:
		// A route's per-team bucket is kept for team:<name>, its
		// per-address one for ip:<key>.
	case counterkey.KindPer:
		// Kept per ip:<key> or team:<name>; a shared bucket names no
		// subject.
		if !strings.HasPrefix(holder, enforce.CallerIP+":") {
			return false
		}
	default:
		return false
	}
	switch {
	case strings.HasPrefix(holder, enforce.CallerTeam+":"):
		return false
	case strings.HasPrefix(holder, enforce.CallerIP+":"):
		return anonymous
	}
	return true
}

// Observe counts a throttled call as a violation of its caller, and locks
// the caller out when it reaches the count: the Verdict then answers the
// call locked-out and reports the lockout (enforce.Observer). Other
// decisions, and administrators, are left alone.
func (x *Escalator) Observe(ctx context.Context, o enforce.Observation) enforce.Verdict {
	d := o.Decision
	if d.Reason != enforce.ReasonThrottled || o.Admin || len(d.Denied) == 0 || o.Subject == "" {
		return enforce.Verdict{}
	}
	c, now, p := o.Call, o.Now, x.policy
	// Only a limit that is the caller's own counts: another caller's use
	// of a shared limit must not lock this one out.
	var own []enforce.Gate
	for _, g := range d.Denied {
		if countsTowardLockout(g, c.Username == "" && c.ClientID == "") {
			own = append(own, g)
		}
	}
	if len(own) == 0 {
		return enforce.Verdict{}
	}
	id := ratelimit.MembershipID(o.SubjectType, o.Subject)
	g := enforce.CounterGate{Key: counterkey.Violation(int(p.Within/time.Second), id).String(),
		Algorithm: enforce.AlgorithmSlidingWindow, Window: p.Within, Limit: int64(p.After), Enforce: true}
	tctx, cancel := context.WithTimeout(ctx, x.opts.BackendTimeout)
	res, err := x.counters.Take(tctx, []enforce.TakeRequest{{Gates: []enforce.CounterGate{g}, Cost: 1, Consume: true, Now: now}},
		time.Now().Add(x.opts.BackendTimeout))
	cancel()
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("escalation: the counter store answered %d results for one call", len(res))
	}
	if err != nil {
		return enforce.Verdict{Err: err}
	}
	st := res[0].States[0]
	remaining, _ := algorithm.Describe(algorithm.Gate{Algorithm: string(g.Algorithm), Window: g.Window, Limit: g.Limit},
		algorithm.State{Count: st.Count, Previous: st.Previous}, now)
	if res[0].Room[0] && remaining > 0 {
		return enforce.Verdict{}
	}
	def := enforce.LongestWait(own, now).DefinitionID
	l := enforce.Lockout{SubjectType: o.SubjectType, Subject: o.Subject, Now: now, Until: now.Add(p.Lockout), Definition: def, Count: p.After,
		Reason: fmt.Sprintf("%s%d violations of %s within %s; locked out for %s", enforce.LockoutReasonPrefix, p.After, def, p.Within, p.Lockout)}
	lctx, cancel := context.WithTimeout(ctx, 4*x.opts.BackendTimeout)
	applied, err := x.source.LockOut(lctx, l)
	cancel()
	if err != nil {
		x.opts.Logger.Warn("escalation lockout could not be written", "caller", id, "definition", def, "err", err)
		return enforce.Verdict{Err: err}
	}
	if !applied {
		return enforce.Verdict{} // an administrator, or quarantined already
	}
	v := enforce.Verdict{Lockout: &l}
	// The violations that locked it are spent: after the lockout the
	// caller starts afresh (New refuses a store that cannot reset).
	rctx, cancel := context.WithTimeout(ctx, x.opts.BackendTimeout)
	if err := x.counters.Reset(rctx, []enforce.CounterGate{g}, now, time.Now().Add(x.opts.BackendTimeout)); err != nil {
		x.opts.Logger.Warn("escalation lockout: could not clear the violation count", "caller", id, "err", err)
		v.Err = err
	}
	cancel()
	if x.opts.Record != nil && o.Caller != "" {
		if err := x.opts.Record.RecordEvent(ratelimit.Event{Kind: ratelimit.EventLockoutStarted, Subject: o.Caller, DefinitionID: def,
			Caller: o.Caller, TargetType: c.TargetType, Target: c.TargetName, Limit: int64(p.After)}); err != nil {
			x.opts.Logger.Warn("escalation lockout: could not record it", "caller", id, "err", err)
		}
	}
	if x.opts.OnLockout != nil {
		x.opts.OnLockout(l)
	}
	d.Reason, d.RetryAfter, d.LockoutRemaining = enforce.ReasonLockedOut, retryAfter(p.Lockout), retryAfter(p.Lockout)
	v.Decision = &d
	return v
}

// retryAfter rounds a wait up to whole seconds, at least one, as the
// core's decisions do.
func retryAfter(wait time.Duration) time.Duration {
	secs := (wait + time.Second - 1) / time.Second
	return max(secs*time.Second, time.Second)
}
