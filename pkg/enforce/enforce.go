// Package enforce is what gateways import to decide, for every data-plane
// call, whether to allow it, throttle it or refuse it as quarantined. The
// core talks to two interfaces it owns (pkg/enforce/source, pkg/enforce/counterstore, re-exported in seams.go): a Source that says what
// to count (definitions, memberships and admins, cached in memory and
// refreshed as change notices arrive) and a CounterStore that counts, all
// of a call's gates in one round trip, all or nothing. Replicas sharing a
// counter store enforce one limit. pkg/enforce/postgres implements both
// over the rlctl database (postgres.Open is the usual way in).
package enforce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/internal/batch"
	"github.com/rlctl/rlctl/pkg/enforce/internal/eventlog"
	"github.com/rlctl/rlctl/pkg/enforce/internal/metrics"
	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Options tune an Enforcer; zero values take the defaults.
type Options struct {
	// Counters counts (required): pkg/enforce/postgres's store, or any
	// CounterStore that passes pkg/enforce/enforcetest.
	Counters CounterStore
	// Source says what to count (required): definitions, memberships,
	// admins and the master switch, with change notices.
	Source Source
	// OnClose, when set, runs in Close once the background work has
	// stopped (postgres.Open closes the pool it opened there; a gateway
	// closes a counter-store layer there, pkg/enforce/lease's, before the
	// store it wraps).
	OnClose func()
	// FailPolicy is what calls get when the counter store fails or times
	// out, for the gates whose definition names no fail policy of its own
	// (ratelimit.FailPolicy*): "" or open passes them uncounted (rate
	// limiting is an availability guardrail, and a store outage must not
	// become a gateway outage), closed refuses them, degrade decides them
	// on this replica's share of each limit through Fallback (required
	// then). A call's policy over its enforce gates: closed on any wins,
	// then degrade, then open (failpolicy.go).
	FailPolicy string
	// FailClosed is the older spelling of FailPolicy closed; with another
	// FailPolicy, New refuses the pair.
	FailClosed bool
	// Fallback decides the gates whose fail policy is degrade while the
	// counter store is down, and reports what it admitted once it is
	// back (pkg/enforce/counterstore; pkg/enforce/degrade). Without one, a definition's
	// degrade is decided as the default policy open.
	Fallback Fallback
	// QuarantineFailClosed denies calls when quarantine cannot be checked
	// (no usable snapshot of the memberships). Default false.
	QuarantineFailClosed bool
	// BackendTimeout bounds each counter round trip (default 250 ms). The
	// counter store is given it as the batch's deadline (PostgreSQL's
	// statement carries it as its statement_timeout), so a
	// decision answered by the fail policy has consumed nothing; a decision
	// whose statement was sent waits for the server's own answer, at most
	// 200 ms past the timeout (docs/design/counters.md, "Deadlines are the
	// server's").
	BackendTimeout time.Duration
	// CacheTTL is the safety net behind LISTEN/NOTIFY: the snapshot is
	// reloaded at least this often (default 30 s). A snapshot older than
	// three TTLs whose reload keeps failing is no longer trusted: decisions
	// follow the fail policies.
	CacheTTL time.Duration
	// SweepInterval is how often expired counters are removed (default 10
	// s; negative disables the sweeper). Each round deletes in batches for
	// as long as batches come back full, so it keeps pace with any rate of
	// new windows; the interval only bounds how long expired rows linger
	// (docs/performance-history.md: 4,200 decisions/s on one-second windows).
	SweepInterval time.Duration
	// MaxConns sizes the pool postgres.Open opens from a URL (default 12:
	// enough for two cores, small enough to keep PostgreSQL from
	// thrashing). The core does not use it.
	MaxConns int32
	// Workers is how many counter round trips may be in flight at once
	// (default GOMAXPROCS), and one more: a decision that finds none in
	// flight makes its own (internal/batch). Decisions that arrive while all are busy share
	// the next round trip, so fewer workers mean bigger batches: on two
	// cores, 2 workers gave 31,000 decisions/s at 64 goroutines, 4 gave
	// 27,000 and 8 gave 18,000 (docs/performance-history.md). Keep it at least
	// two below the pool size: one connection listens for changes, and a
	// lone decision's own round trip needs one.
	Workers int
	// IPv6Prefix is the prefix length an anonymous call's IPv6 client
	// address is keyed by (default 64: clientip.DefaultIPv6Prefix); IPv4
	// addresses are keyed by the address.
	IPv6Prefix int
	Now        func() time.Time
	Logger     *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Observers are told of every decision that refuses a call by a rule
	// of the core (a throttle of Check, a quarantine denial), in order, and
	// may replace it (observer.go): the record of violations
	// (pkg/enforce/violations) and escalation lockouts
	// (pkg/enforce/escalation) are observers. pkg/enforce/postgres's Open
	// and New, given none (nil), add a record of violations on the
	// rl_events table.
	Observers []Observer

	// Guard, when set, screens every call before anything else
	// (guard.go): pkg/auththrottle's Throttle refuses an address locked
	// out for failed authentications, administrators included.
	Guard Guard
}

// Enforcer decides calls. It is safe for concurrent use.
type Enforcer struct {
	counters CounterStore
	source   Source
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	metrics  *metrics.Metrics

	// snaps keeps the snapshot decisions read (internal/snapshot).
	snaps *snapshots.Reloader[viewCache]

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// count is the take through the counter store (counting.go).
	count counting
	// views builds and caches calls' views (viewcache.go).
	views viewer
	// observing tells the observers of refusals (observer.go).
	observing observing
	// stops finds and decides the quarantines and lockouts that refuse a
	// call before its gates (stops.go).
	stops stops
	// events aggregates what the hot path would log (internal/eventlog).
	events *eventlog.Log
	// exhausted remembers the gates this replica saw used up, for the
	// fail policy (exhausted.go).
	exhausted *exhaustedKeys
	// recentLockouts are the escalation lockouts this replica's observers
	// wrote, until its snapshot holds them (internal/snapshot's Recent).
	recentLockouts snapshots.Recent
	// guard is the core's side of Options.Guard (guard.go).
	guard guarding
	// policies are the fail policies: the default (Options.FailPolicy, or
	// closed for Options.FailClosed) and the Fallback (failpolicy.go).
	policies failPolicies
}

// New starts an Enforcer over opts.Counters and opts.Source. It loads the
// first snapshot (failing when it cannot), then keeps it fresh in the
// background until Close. postgres.Open and postgres.New build both from
// the rlctl database.
func New(ctx context.Context, opts Options) (*Enforcer, error) {
	if opts.Counters == nil || opts.Source == nil {
		return nil, errors.New("enforce: Options.Counters and Options.Source are required")
	}
	if opts.BackendTimeout <= 0 {
		opts.BackendTimeout = 250 * time.Millisecond
	}
	if opts.CacheTTL <= 0 {
		opts.CacheTTL = 30 * time.Second
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = 10 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 12
	}
	if opts.Workers <= 0 {
		opts.Workers = max(runtime.GOMAXPROCS(0), 2)
	}
	if !clientip.ValidIPv6Prefix(opts.IPv6Prefix) {
		opts.IPv6Prefix = clientip.DefaultIPv6Prefix
	}
	policy, err := defaultFailPolicy(opts)
	if err != nil {
		return nil, err
	}
	e := &Enforcer{counters: opts.Counters, source: opts.Source, opts: opts, log: opts.Logger, now: opts.Now, exhausted: newExhaustedKeys(),
		policies: failPolicies{def: policy, fallback: opts.Fallback}}
	e.count = counting{counters: opts.Counters, timeout: opts.BackendTimeout, local: opts.Counters.Capabilities().Local}
	e.count.localNext = e.count.roundTrip
	e.views = viewer{ipv6Prefix: opts.IPv6Prefix, counterGates: e.count.local}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.events = eventlog.New(e.log, e.now, eventlog.Opts{})
	m, err := metrics.New(opts.Registerer, quarantineCounter(opts.Source, func() *snapshot {
		if e.snaps == nil { // scraped while New runs
			return nil
		}
		return e.snaps.Current()
	}), e.now, backendName(opts.Counters))
	if err != nil {
		return nil, err
	}
	e.metrics = m
	e.count.metrics = m
	e.stops = stops{metrics: m, events: e.events, ipv6Prefix: opts.IPv6Prefix, recent: &e.recentLockouts}
	caps := opts.Counters.Capabilities()
	e.guard = guarding{guard: opts.Guard, counters: opts.Counters, metrics: m, events: e.events, log: e.log,
		timeout: opts.BackendTimeout, ride: !caps.Local && caps.GiveBack}
	m.BackendTimeout.Set(opts.BackendTimeout.Seconds())
	e.snaps = snapshots.NewReloader(opts.Source, opts.CacheTTL, e.now, e.log, newViewCache, &e.recentLockouts, snapshots.Hooks{
		Reloaded: m.Reloaded, Failed: func(kind string) { m.Errors.WithLabelValues(kind).Inc() },
		Notified: m.Notifications.Inc, Foreign: e.guard.changed})
	e.observing = observing{observers: opts.Observers, metrics: m, events: e.events, ipv6Prefix: opts.IPv6Prefix,
		recent: &e.recentLockouts, reloads: e.snaps.Started}
	if err := e.snaps.LoadAll(ctx); err != nil {
		return nil, err
	}
	// Bound last, once nothing else can fail: a New that fails leaves the
	// guard free for the next attempt.
	if err := e.guard.bind(); err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.count.batcher = batch.New(e.counters)
	for range opts.Workers {
		e.wg.Go(func() { e.count.batcher.Work(bg) })
	}
	e.wg.Go(func() { e.snaps.Listen(bg) })
	e.wg.Go(func() { e.snaps.Loop(bg) })
	e.wg.Go(func() { every(bg, e.events.Interval(), func(context.Context) { e.events.FlushIfDue() }) })
	if opts.SweepInterval > 0 {
		e.wg.Go(func() {
			every(bg, opts.SweepInterval, func(ctx context.Context) { sweep(ctx, e.counters, e.now(), e.metrics, e.log) })
		})
	}
	return e, nil
}

// Close stops the background work, writes the log lines still
// aggregated, then runs Options.OnClose.
func (e *Enforcer) Close() {
	e.cancel()
	e.wg.Wait()
	e.count.batcher.Stop()
	e.events.Flush()
	if e.opts.OnClose != nil {
		e.opts.OnClose()
	}
}

// Check decides a call and, when it is allowed, takes its cost from every
// gate. The error is non-nil only when a backend failure decided the call
// (the decision then says fail-open or fail-closed, or is Degraded) or
// overload shed it (ReasonOverloaded, ErrOverloaded): gateways can log it
// and must still follow the decision.
func (e *Enforcer) Check(ctx context.Context, c Call) (Decision, error) {
	return e.decide(ctx, c, true)
}

// Peek reports the decision Check would make now, consuming nothing.
func (e *Enforcer) Peek(ctx context.Context, c Call) (Decision, error) {
	return e.decide(ctx, c, false)
}

var allowedNoGates = Decision{Allowed: true, Reason: ReasonAllowed}

func (e *Enforcer) decide(ctx context.Context, c Call, consume bool) (Decision, error) {
	// Control-plane calls are not ours to limit, nor anonymous calls
	// without a client address: limits key on an identity, and such a
	// call has no one to limit or quarantine. An anonymous call with a
	// client address is the caller ip:<key>, so unauthenticated calls
	// never share one bucket and never borrow a principal's bucket.
	ip := clientAddr(c.ClientIP)
	anonymous := c.Username == "" && c.ClientID == ""
	if c.Descriptors == nil && ((c.TargetType == "" && c.Path == "") || (anonymous && !ip.IsValid())) {
		e.metrics.Checks.WithLabelValues("skipped").Inc()
		return allowedNoGates, nil
	}
	now := e.now()
	snap := e.snaps.Usable(now)
	if snap == nil {
		e.metrics.Cache.WithLabelValues("miss").Inc()
		if c.TargetType == "" {
			// Only routes could have applied, and without a snapshot
			// there is no route to say so: a call without a target is
			// not ours to fail closed on.
			e.metrics.Checks.WithLabelValues("skipped").Inc()
			return allowedNoGates, nil
		}
		return e.noSnapshot(c)
	}
	e.metrics.CacheHit.Inc()
	// Routes: an exempt path is never limited; a call without a target
	// that no route matches is skipped, as every call without a target
	// was before routes existed.
	var routes []plan.RouteMatch
	if c.Path != "" {
		var exempt bool
		routes, exempt = snap.Routes.Match(strings.ToUpper(c.Method), RoutePath(c.Path))
		if exempt || (c.TargetType == "" && len(routes) == 0) {
			e.metrics.Checks.WithLabelValues("skipped").Inc()
			return allowedNoGates, nil
		}
	}
	// The master switch is off (rlctl enforcement off): allow, count nothing.
	if snap.EnforcementOff {
		e.metrics.Checks.WithLabelValues("enforcement_off").Inc()
		return Decision{Allowed: true, Reason: ReasonEnforcementOff}, nil
	}
	// 0. The Guard's screening (a client address locked out for failed
	// authentications): refused before anything else, administrators
	// included. What it must ask the store rides in the round trip of
	// the call's counters when there is one (guard.go).
	q, d, refused := e.guard.screen(ctx, c, ip)
	if refused {
		return d, nil
	}
	v := e.views.view(snap, c, ip, anonymous, routes, now)
	// 1-2. Quarantines and lockouts refuse the call before its gates.
	if s := e.stops.of(snap, v, c, anonymous, now); s.kind != stopNone {
		if d, refused := e.guard.settle(ctx, q); refused {
			return d, nil
		}
		return e.observing.observed(ctx, c, e.stops.decide(s, c, v, now), v, consume, now), nil
	}
	// 3-5. Caller, caller_target, target, tool, route and descriptor gates.
	gates := v.gatesAt(now)
	if len(gates) == 0 {
		if d, refused := e.guard.settle(ctx, q); refused {
			return d, nil
		}
		e.metrics.Checks.WithLabelValues("allowed").Inc()
		return allowedNoGates, nil
	}
	cost := c.Cost
	if cost <= 0 {
		cost = 1
	}
	hints := v
	gates, reps := foldRepeats(gates, cost)
	if reps != nil {
		hints = nil // the view's counter gates are its unfolded gates'
	}
	d, err := e.take(ctx, c, gates, hints, cost, consume, now, q)
	if reps != nil {
		d = e.count.unfold(ctx, d, reps, consume, now)
	}
	if err == nil {
		d = e.observing.observed(ctx, c, d, v, consume, now)
	}
	return d, err
}

// callerSubjectTypes are the subject types of callView.callers, in order.
var callerSubjectTypes = [3]string{ratelimit.SubjectUser, ratelimit.SubjectClient, ratelimit.SubjectTeam}

func targetSubject(targetType, name string) string {
	if targetType == ratelimit.EntityA2AAgent {
		return ratelimit.MembershipID(ratelimit.SubjectAgent, name)
	}
	return ratelimit.MembershipID(ratelimit.SubjectServer, name)
}

// noSnapshot decides without definitions or memberships: quarantine follows
// its fail rule, limits follow theirs.
func (e *Enforcer) noSnapshot(c Call) (Decision, error) {
	err := errors.New("enforce: no usable snapshot of definitions and memberships")
	if last := e.snaps.LastErr(); last != nil {
		err = fmt.Errorf("enforce: no usable snapshot: %w", last)
	}
	e.metrics.Errors.WithLabelValues("snapshot").Inc()
	if e.opts.QuarantineFailClosed || e.policies.def == ratelimit.FailPolicyClosed {
		e.metrics.Checks.WithLabelValues("fail_closed").Inc()
		return Decision{Allowed: false, Reason: ReasonFailClosed, RetryAfter: time.Second}, err
	}
	e.metrics.Checks.WithLabelValues("fail_open").Inc()
	return Decision{Allowed: true, Reason: ReasonFailOpen}, err
}

// CallerIP and CallerTeam are the caller types of counter keys'
// subjects (pkg/enforce/counterkey defines them): an anonymous call keyed
// by its client address, ip:<key>, and a team's buckets, team:<name>.
const (
	CallerIP   = counterkey.CallerIP
	CallerTeam = counterkey.CallerTeam
)

// counterGate is what the counter store sees of a gate.
func counterGateOf(g Gate) CounterGate {
	return CounterGate{Key: g.Key(), Algorithm: g.Algorithm, Window: time.Duration(g.WindowSeconds) * time.Second,
		Limit: g.Limit, Burst: g.Burst, Enforce: !g.Shadow, Lease: g.Lease(), Parts: g.Parts()}
}

// arith is the gate as pkg/enforce/algorithm sees it.
func arith(g Gate) algorithm.Gate {
	return algorithm.Gate{Algorithm: string(g.Algorithm), Window: time.Duration(g.WindowSeconds) * time.Second,
		Limit: g.Limit, Burst: g.Burst}
}

// describe fills the gate's Count, Remaining, Reset and (without room)
// RetryAfter from its state after the decision, in its algorithm's terms.
func describe(g *Gate, st GateState, room bool, cost int64, now time.Time) {
	s := algorithm.State{Count: st.Count, Previous: st.Previous, TAT: st.TAT}
	a := arith(*g)
	remaining, reset := algorithm.Describe(a, s, now)
	g.Remaining = remaining
	g.Count = st.Count
	switch g.Algorithm {
	case AlgorithmTokenBucket:
		T := algorithm.Interval(a.Window, a.Limit)
		g.Count = (int64(reset) + T - 1) / T
		g.Reset = now.Add(reset)
	case AlgorithmSlidingWindow:
		g.Reset = now.Add(reset)
	}
	g.RetryAfter = 0
	if !room {
		g.RetryAfter = algorithm.RetryAfter(a, s, now, cost)
	}
}

// take runs the counter round trip and turns its answer into a decision.
//
// hints, when not nil, is the call's view: it keeps its gates' counter
// gates, sparing building them (local.go).
//
// q, when not nil, is the Guard's question about the call, for the store
// to answer in the same round trip (guard.go): a refusal it brings
// decides the call, and what the call took is given back.
func (e *Enforcer) take(ctx context.Context, c Call, gates []Gate, hints *callView, cost int64, consume bool, now time.Time, q *Question) (Decision, error) {
	// gates are sorted: a call's view keeps them in the order the stores
	// take them (viewer.build).
	if err := e.policies.report(ctx); err != nil {
		if d, refused := e.guard.settle(ctx, q); refused {
			return d, nil
		}
		return e.backendFailed(c, gates, cost, consume, err)
	}
	if e.count.local {
		// The Guard's question is asked before the call over such a
		// store: a decision made in memory makes no round trip to share
		// (screen).
		res, buf, err := e.count.takeLocal(ctx, gates, hints, cost, consume, now)
		defer e.count.release(buf)
		if err != nil {
			return e.backendFailed(c, gates, cost, consume, err)
		}
		if consume {
			e.count.countOver(ctx, c, gates, &res, cost, now)
		}
		return e.decision(c, gates, res, cost, consume, now), nil
	}
	req := TakeRequest{Cost: cost, Consume: consume, Now: now, Gates: make([]CounterGate, len(gates))}
	for i, g := range gates {
		req.Gates[i] = counterGateOf(g)
	}
	var pr *TakeRequest
	if q != nil {
		pr = &q.Request
	}
	rep := e.count.roundTripWith(ctx, req, pr)
	if errors.Is(rep.Err, ErrOverloaded) {
		return e.backendFailed(c, gates, cost, consume, rep.Err)
	}
	if rep.Err != nil {
		// The Guard's question went unanswered too: it is asked on its
		// own (the round may have failed over the call's own gates), and
		// only a call the guard lets through is left to the fail policy.
		if d, refused := e.guard.settle(ctx, q); refused {
			return d, nil
		}
		return e.backendFailed(c, gates, cost, consume, rep.Err)
	}
	if q != nil {
		if r, refused := q.Answer(rep.Peek); refused {
			if consume && rep.Res.Allowed {
				e.guard.giveBack(req, rep.Res)
			}
			return e.guard.refused(r), nil
		}
	}
	if consume {
		e.count.countOver(ctx, c, gates, &rep.Res, cost, now)
	}
	return e.decision(c, gates, rep.Res, cost, consume, now), nil
}

// sortGates puts a call's gates in the order the counter store takes them
// (every store locks or reserves in that order). Keys are unique within a
// call (each names its window or its definition), so sorting by key orders
// the gates fully.
func sortGates(gates []Gate) {
	slices.SortFunc(gates, func(a, b Gate) int {
		return cmp.Or(strings.Compare(a.Key(), b.Key()), cmp.Compare(a.WindowSeconds, b.WindowSeconds))
	})
}

// decision turns the counters' answer for gates into a decision.
func (e *Enforcer) decision(c Call, gates []Gate, res TakeResult, cost int64, consume bool, now time.Time) Decision {
	d := Decision{Allowed: res.Allowed, Reason: ReasonAllowed, Gates: gates}
	tightest := -1
	for i := range gates {
		g := &gates[i]
		describe(g, res.States[i], res.Room[i], cost, now)
		e.metrics.GateChecked(g, res.Room[i])
		if !res.Room[i] {
			if cost == 1 && !g.Shadow && g.RetryAfter > 0 {
				// No room for the smallest call: remembered for the
				// fail policy (exhausted.go).
				e.exhausted.note(*g, now.Add(g.RetryAfter))
			}
			if g.Shadow {
				d.Shadow = append(d.Shadow, *g)
				e.metrics.ShadowDenied.WithLabelValues(AxisLabel(g.Axis), g.EntityType, strconv.Itoa(g.WindowSeconds)).Inc()
				continue
			}
			d.Denied = append(d.Denied, *g)
			e.metrics.Throttled.WithLabelValues(AxisLabel(g.Axis), g.EntityType, strconv.Itoa(g.WindowSeconds)).Inc()
		}
		if !g.Shadow && (tightest < 0 || g.Remaining < gates[tightest].Remaining) {
			tightest = i
		}
	}
	if tightest >= 0 {
		d.Limit, d.Remaining, d.Reset = gates[tightest].Limit, gates[tightest].Remaining, gates[tightest].Reset
	}
	if !d.Allowed {
		d.Reason = ReasonThrottled
		// The call can pass only once every denying gate has room: room
		// only grows while nothing is taken, so at the longest of their
		// waits.
		latest := longestWait(d.Denied, now)
		d.Limit, d.Remaining, d.Reset = latest.Limit, latest.Remaining, latest.Reset
		d.RetryAfter = retryAfter(wait(latest, now))
		e.metrics.Checks.WithLabelValues("throttled").Inc()
		if consume {
			e.events.Record(eventlog.Event{Reason: eventlog.Throttled, Username: c.Username, ClientID: c.ClientID, TargetType: c.TargetType,
				Target: c.TargetName, Gate: latest.DefinitionID, Limit: latest.Limit, RetryAfter: d.RetryAfter, Caller: eventCaller(c, e.opts.IPv6Prefix)})
		}
	} else {
		e.metrics.Allowed.Inc()
	}
	if len(d.Shadow) > 0 && consume {
		e.events.Record(eventlog.Event{Reason: eventlog.Shadow, Username: c.Username, ClientID: c.ClientID, TargetType: c.TargetType,
			Target: c.TargetName, Gate: d.Shadow[0].DefinitionID, Caller: eventCaller(c, e.opts.IPv6Prefix)})
	}
	return d
}

// backendResult is a round trip's result label: ok, shed, timeout or
// error.
func backendResult(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrOverloaded):
		return "shed"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "error"
}

// backendFailed applies the fail policy (failpolicy.go): closed denies,
// degrade decides on this replica's share of the limits, open passes.
func (e *Enforcer) backendFailed(c Call, gates []Gate, cost int64, consume bool, err error) (Decision, error) {
	// Whatever decides, not a gate this replica saw used up and that
	// cannot have room yet (exhausted.go): the store would refuse it.
	// Under degrade that refusal is a local decision too.
	now := e.now()
	policy := e.policies.ofCall(gates)
	for _, g := range gates {
		if until, ok := e.exhausted.until(g, now); ok && !g.Shadow {
			g.RetryAfter = until.Sub(now)
			e.metrics.Checks.WithLabelValues("throttled").Inc()
			return Decision{Allowed: false, Reason: ReasonThrottled, Gates: gates, Denied: []Gate{g},
				Limit: g.Limit, Reset: g.Reset, RetryAfter: retryAfter(g.RetryAfter),
				Degraded: policy == ratelimit.FailPolicyDegrade && !errors.Is(err, ErrOverloaded)}, err
		}
	}
	closed := policy == ratelimit.FailPolicyClosed
	if errors.Is(err, ErrOverloaded) && !closed {
		// Shed: no policy's answer. A gateway answers 503, and Envoy
		// applies its failure_mode_deny; a fail-closed call is refused as
		// fail-closed below, so that shedding never opens it.
		e.metrics.Checks.WithLabelValues("overloaded").Inc()
		return Decision{Allowed: false, Reason: ReasonOverloaded, RetryAfter: time.Second}, err
	}
	e.metrics.Errors.WithLabelValues("counters").Inc()
	e.events.Record(eventlog.Event{Reason: eventlog.Backend, FailClosed: closed, Target: c.TargetName, Err: err})
	if policy == ratelimit.FailPolicyDegrade {
		d := e.decision(c, gates, e.policies.decideLocally(gates, cost, consume, now), cost, consume, now)
		d.Degraded = true
		return d, err
	}
	if closed {
		e.metrics.Checks.WithLabelValues("fail_closed").Inc()
		return Decision{Allowed: false, Reason: ReasonFailClosed, Gates: gates, RetryAfter: time.Second}, err
	}
	e.metrics.Checks.WithLabelValues("fail_open").Inc()
	return Decision{Allowed: true, Reason: ReasonFailOpen, Gates: gates}, err
}

// wait is how long the gate needs before the call has room on it: its
// RetryAfter, or (a gate without one, as a hand-made Decision's) its
// reset.
func wait(g Gate, now time.Time) time.Duration {
	if g.RetryAfter > 0 {
		return g.RetryAfter
	}
	return g.Reset.Sub(now)
}

// longestWait is the first of the gates whose wait is longest.
func longestWait(gates []Gate, now time.Time) Gate {
	latest := gates[0]
	for _, g := range gates[1:] {
		if wait(g, now) > wait(latest, now) {
			latest = g
		}
	}
	return latest
}

// retryAfter rounds a wait up to whole seconds, at least one: a client
// that retries after it never arrives before the window has turned.
func retryAfter(wait time.Duration) time.Duration {
	secs := (wait + time.Second - 1) / time.Second
	return max(secs*time.Second, time.Second)
}

// AxisLabel is an axis's label in the metrics (clr, ctg, tgt): short, and
// the same in the core's series and those of the features built beside it
// (the record of violations).
func AxisLabel(axis string) string { return metrics.AxisLabel(axis) }
