// Package enforce is what gateways import to decide, for every data-plane
// call, whether to allow it, throttle it or refuse it as quarantined. The
// core talks to two interfaces it owns (seams.go): a Source that says what
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
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	// stopped (postgres.Open closes the pool it opened there).
	OnClose func()
	// FailClosed denies calls when the counter store fails or times out.
	// The default (false) fails open: rate limiting is an availability
	// guardrail, and a store outage must not become a gateway outage.
	// A definition marked fail_closed denies on its own regardless.
	FailClosed bool
	// QuarantineFailClosed denies calls when quarantine cannot be checked
	// (no usable snapshot of the memberships). Default false.
	QuarantineFailClosed bool
	// BackendTimeout bounds each counter round trip (default 250 ms). The
	// counter store is given it as the batch's deadline (PostgreSQL's
	// statement carries it as its statement_timeout), so a
	// decision answered by the fail policy has consumed nothing; a decision
	// whose statement was sent waits for the server's own answer, at most
	// 200 ms past the timeout (docs/design.md, "Deadlines are the
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
	// (docs/performance.md: 4,200 decisions/s on one-second windows).
	SweepInterval time.Duration
	// MaxConns sizes the pool postgres.Open opens from a URL (default 12:
	// enough for two cores, small enough to keep PostgreSQL from
	// thrashing). The core does not use it.
	MaxConns int32
	// Workers is how many counter round trips may be in flight at once
	// (default GOMAXPROCS). Decisions that arrive while all are busy share
	// the next round trip, so fewer workers mean bigger batches: on two
	// cores, 2 workers gave 31,000 decisions/s at 64 goroutines, 4 gave
	// 27,000 and 8 gave 18,000 (docs/performance.md). Keep it below the pool
	// size: one connection listens for changes.
	Workers int
	Now     func() time.Time
	Logger  *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// Enforcer decides calls. It is safe for concurrent use.
type Enforcer struct {
	counters CounterStore
	source   Source
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	metrics  *metrics

	snap atomic.Pointer[snapshot]
	// refreshMu serializes snapshot loads.
	refreshMu sync.Mutex
	// lastRefreshErr is set while reloads fail.
	lastRefreshErr atomic.Pointer[error]
	// reload holds the changes notified since the last reload (refresh.go).
	reload reloadState

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	kick    chan struct{}
	batcher *batcher
	// events aggregates what the hot path would log (events.go).
	events *eventLog
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
	e := &Enforcer{counters: opts.Counters, source: opts.Source, opts: opts, log: opts.Logger, now: opts.Now,
		kick: make(chan struct{}, 1)}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.events = newEventLog(e.log, e.now, eventLogOpts{})
	m, err := newMetrics(opts.Registerer, e.quarantineCount, e.now)
	if err != nil {
		return nil, err
	}
	e.metrics = m
	m.backendTimeout.Set(opts.BackendTimeout.Seconds())
	if err := e.refresh(ctx); err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.batcher = newBatcher(e.counters)
	for range opts.Workers {
		e.wg.Go(func() { e.batcher.work(bg) })
	}
	e.wg.Add(3)
	go e.listen(bg)
	go e.refreshLoop(bg)
	go e.every(bg, e.events.interval, e.flush)
	if opts.SweepInterval > 0 {
		e.wg.Add(1)
		go e.every(bg, e.opts.SweepInterval, e.sweep)
	}
	return e, nil
}

// Close stops the background work, writes the log lines still
// aggregated, then runs Options.OnClose.
func (e *Enforcer) Close() {
	e.cancel()
	e.wg.Wait()
	e.events.flush()
	if e.opts.OnClose != nil {
		e.opts.OnClose()
	}
}

// Check decides a call and, when it is allowed, takes its cost from every
// gate. The error is non-nil only when a backend failure decided the call
// (the decision then says fail-open or fail-closed): gateways can log it and
// must still follow the decision.
func (e *Enforcer) Check(ctx context.Context, c Call) (Decision, error) {
	return e.decide(ctx, c, true)
}

// Peek reports the decision Check would make now, consuming nothing.
func (e *Enforcer) Peek(ctx context.Context, c Call) (Decision, error) {
	return e.decide(ctx, c, false)
}

var allowedNoGates = Decision{Allowed: true, Reason: ReasonAllowed}

func (e *Enforcer) decide(ctx context.Context, c Call, consume bool) (Decision, error) {
	// Control-plane calls and anonymous calls are not ours to limit (the
	// reference's data-plane rule: limits key on an identity; a gateway
	// that lets anonymous calls through has no one to limit or quarantine).
	if c.TargetType == "" || (c.Username == "" && c.ClientID == "") {
		e.metrics.checks.WithLabelValues("skipped").Inc()
		return allowedNoGates, nil
	}
	now := e.now()
	snap := e.usableSnapshot(now)
	if snap == nil {
		return e.noSnapshot(c)
	}
	// The master switch is off (rlctl enforcement off): allow, count nothing.
	if snap.enforcementOff {
		e.metrics.checks.WithLabelValues("enforcement_off").Inc()
		return Decision{Allowed: true, Reason: ReasonEnforcementOff}, nil
	}
	// A target name that is not valid (too long, control characters) can
	// match no target definition or quarantine, but the caller's own
	// quarantine and limits still apply: an odd path must not be a way
	// around them. Its raw form still separates caller_target buckets.
	targetName, typeKnown, nameErr := ratelimit.NormalizeTargetName(c.TargetType, c.TargetName)
	targetKnown := typeKnown && nameErr == nil
	if !targetKnown {
		targetName = c.TargetName
	}
	callerType, identity := ratelimit.SubjectUser, c.Username
	if c.ClientID != "" {
		callerType, identity = "agent", c.ClientID
	}
	userKey, clientKey := "", ""
	if c.Username != "" {
		userKey = ratelimit.MembershipID(ratelimit.SubjectUser, c.Username)
	}
	if c.ClientID != "" {
		clientKey = ratelimit.MembershipID(ratelimit.SubjectClient, c.ClientID)
	}
	admin := c.IsAdmin || snap.admins[userKey] || snap.admins[clientKey]

	// 1. Target quarantine: for everyone, administrators included.
	if snap.targetsOn && targetKnown {
		if m, ok := snap.members.get(targetSubject(c.TargetType, targetName)); ok && m.quarantinedAt(now) {
			return e.quarantined("target", c.TargetType, c, targetName), nil
		}
	}
	// 2. Caller quarantine: not for administrators.
	if snap.callersOn && !admin {
		for i, k := range []string{userKey, clientKey} {
			if m, ok := snap.members.get(k); ok && k != "" && m.quarantinedAt(now) {
				return e.quarantined("caller", []string{ratelimit.SubjectUser, ratelimit.SubjectClient}[i], c, targetName), nil
			}
		}
	}
	// 3-5. Caller, caller_target and target gates.
	gates := e.buildGates(snap, c, callerType, identity, userKey, clientKey, targetName, admin, now)
	if len(gates) == 0 {
		e.metrics.checks.WithLabelValues("allowed").Inc()
		return allowedNoGates, nil
	}
	cost := c.Cost
	if cost <= 0 {
		cost = 1
	}
	return e.take(ctx, c, gates, cost, consume, now)
}

func targetSubject(targetType, name string) string {
	if targetType == ratelimit.EntityA2AAgent {
		return ratelimit.MembershipID(ratelimit.SubjectAgent, name)
	}
	return ratelimit.MembershipID(ratelimit.SubjectServer, name)
}

func (e *Enforcer) quarantined(scope, entityType string, c Call, target string) Decision {
	e.metrics.checks.WithLabelValues("quarantined").Inc()
	e.metrics.quarantineDenied.WithLabelValues(scope, entityType).Inc()
	e.events.record(event{reason: eventQuarantined, scope: scope, username: c.Username, clientID: c.ClientID,
		targetType: c.TargetType, target: target})
	return Decision{Allowed: false, Reason: ReasonQuarantined, QuarantineScope: scope}
}

// noSnapshot decides without definitions or memberships: quarantine follows
// its fail rule, limits follow theirs.
func (e *Enforcer) noSnapshot(c Call) (Decision, error) {
	err := errors.New("enforce: no usable snapshot of definitions and memberships")
	if p := e.lastRefreshErr.Load(); p != nil {
		err = fmt.Errorf("enforce: no usable snapshot: %w", *p)
	}
	e.metrics.errors.WithLabelValues("snapshot").Inc()
	if e.opts.QuarantineFailClosed || e.opts.FailClosed {
		e.metrics.checks.WithLabelValues("fail_closed").Inc()
		return Decision{Allowed: false, Reason: ReasonFailClosed, RetryAfter: time.Second}, err
	}
	e.metrics.checks.WithLabelValues("fail_open").Inc()
	return Decision{Allowed: true, Reason: ReasonFailOpen}, err
}

// buildGates lists the gates of a call, in the reference's order of axes.
func (e *Enforcer) buildGates(snap *snapshot, c Call, callerType, identity, userKey, clientKey, targetName string, admin bool, now time.Time) []Gate {
	var gates []Gate
	caller := callerType + ":" + identity
	target := c.TargetType + ":" + targetName
	if !admin {
		groups := callerGroups(snap, userKey, clientKey)
		// Per axis and window, the most restrictive enforce definition
		// wins and they share one bucket per caller; shadow definitions
		// each count on their own.
		best := map[string]int{} // axis|window -> index in gates
		for _, g := range groups {
			for _, d := range snap.groupDefs[g] {
				limit := d.UserMaxRequests
				if callerType == "agent" {
					limit = d.AgentMaxRequests
				}
				if limit == nil {
					continue // this group does not gate this caller type
				}
				subject := caller
				if d.Axis == ratelimit.AxisCallerTarget {
					subject = caller + "|" + target
				}
				if d.Mode == ratelimit.ModeShadow {
					gates = append(gates, newGate(d, "s|"+d.ID+"|"+subject, int64(*limit), true, now))
					continue
				}
				slot := d.Axis + "|" + strconv.Itoa(d.WindowSeconds)
				key := axisPrefix(d.Axis) + "|" + strconv.Itoa(d.WindowSeconds) + "|" + subject
				if i, ok := best[slot]; ok {
					fc := gates[i].failClosed || d.FailClosed
					if int64(*limit) < gates[i].Limit {
						gates[i] = newGate(d, key, int64(*limit), false, now)
					}
					gates[i].failClosed = fc
					continue
				}
				best[slot] = len(gates)
				gates = append(gates, newGate(d, key, int64(*limit), false, now))
			}
		}
	}
	addTarget := func(d ratelimit.Definition, key string) {
		if d.MaxRequests != nil {
			gates = append(gates, newGate(d, key, int64(*d.MaxRequests), d.Mode == ratelimit.ModeShadow, now))
		}
	}
	for _, d := range snap.targetDefs[targetKey(c.TargetType, targetName)] {
		addTarget(d, "t|"+d.ID)
	}
	if c.TargetType == ratelimit.EntityMCPServer {
		for _, d := range snap.serverGroups[targetName] {
			addTarget(d, "t|"+d.ID+"|"+targetName)
		}
	}
	if tool := strings.TrimSpace(c.Tool); tool != "" {
		leafType := ratelimit.EntityMCPTool
		if c.TargetType == ratelimit.EntityA2AAgent {
			leafType = ratelimit.EntityA2ASkill
		}
		for _, d := range snap.targetDefs[targetKey(leafType, targetName+":"+tool)] {
			addTarget(d, "t|"+d.ID)
		}
	}
	return gates
}

func axisPrefix(axis string) string {
	if axis == ratelimit.AxisCallerTarget {
		return "ct"
	}
	return "c"
}

// callerGroups merges the groups of the caller's user and client
// memberships, leaving out the quarantine groups.
func callerGroups(snap *snapshot, userKey, clientKey string) []string {
	var groups []string
	for _, k := range []string{userKey, clientKey} {
		if k == "" {
			continue
		}
		m, _ := snap.members.get(k)
		for _, g := range m.groups {
			if g != ratelimit.GroupQuarantineCallers && g != ratelimit.GroupQuarantineTargets && !slices.Contains(groups, g) {
				groups = append(groups, g)
			}
		}
	}
	return groups
}

// newGate builds a fixed-window gate. Reset is the end of the window now
// is in (windows are aligned on the epoch: index floor(unix/window)), as
// the counter store computes it from the same now.
func newGate(d ratelimit.Definition, key string, limit int64, shadow bool, now time.Time) Gate {
	w := int64(d.WindowSeconds)
	idx := now.Unix() / w
	return Gate{
		DefinitionID: d.ID, Axis: d.Axis, EntityType: d.EntityType, WindowSeconds: d.WindowSeconds,
		Limit: limit, Reset: time.Unix((idx+1)*w, 0), Shadow: shadow,
		key: key, failClosed: d.FailClosed,
	}
}

// counterGate is what the counter store sees of a gate.
func (g Gate) counterGate() CounterGate {
	return CounterGate{Key: g.key, Algorithm: AlgorithmFixedWindow, Window: time.Duration(g.WindowSeconds) * time.Second,
		Limit: g.Limit, Enforce: !g.Shadow}
}

// take runs the counter round trip and turns its answer into a decision.
func (e *Enforcer) take(ctx context.Context, c Call, gates []Gate, cost int64, consume bool, now time.Time) (Decision, error) {
	// Keys are unique within a call (each names its window or its
	// definition), so sorting by key orders the gates fully.
	slices.SortFunc(gates, func(a, b Gate) int {
		return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.WindowSeconds, b.WindowSeconds))
	})
	req := TakeRequest{Cost: cost, Consume: consume, Now: now, Gates: make([]CounterGate, len(gates))}
	for i, g := range gates {
		req.Gates[i] = g.counterGate()
	}
	tctx, cancel := context.WithTimeout(ctx, e.opts.BackendTimeout)
	start := time.Now()
	res, err := e.batcher.take(tctx, req)
	cancel()
	e.metrics.observeBackend(consume, err, time.Since(start))
	if err != nil {
		return e.backendFailed(c, gates, err)
	}

	d := Decision{Allowed: res.Allowed, Reason: ReasonAllowed, Gates: gates}
	tightest := -1
	for i := range gates {
		g := &gates[i]
		g.Count = res.States[i].Count
		g.Remaining = max(g.Limit-g.Count, 0)
		e.metrics.gateChecks.WithLabelValues(axisLabel(g.Axis), g.EntityType, outcome(res.Room[i])).Inc()
		if !res.Room[i] {
			if g.Shadow {
				d.Shadow = append(d.Shadow, *g)
				e.metrics.shadowDenied.WithLabelValues(axisLabel(g.Axis), g.EntityType, strconv.Itoa(g.WindowSeconds)).Inc()
				continue
			}
			d.Denied = append(d.Denied, *g)
			e.metrics.throttled.WithLabelValues(axisLabel(g.Axis), g.EntityType, strconv.Itoa(g.WindowSeconds)).Inc()
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
		// The call can pass only once every denying gate has reset.
		latest := d.Denied[0]
		for _, g := range d.Denied[1:] {
			if g.Reset.After(latest.Reset) {
				latest = g
			}
		}
		d.Limit, d.Remaining, d.Reset = latest.Limit, latest.Remaining, latest.Reset
		d.RetryAfter = retryAfter(latest.Reset.Sub(now))
		e.metrics.checks.WithLabelValues("throttled").Inc()
		if consume {
			e.events.record(event{reason: eventThrottled, username: c.Username, clientID: c.ClientID, targetType: c.TargetType,
				target: c.TargetName, gate: latest.DefinitionID, limit: latest.Limit, retryAfter: d.RetryAfter})
		}
	} else {
		e.metrics.checks.WithLabelValues("allowed").Inc()
	}
	if len(d.Shadow) > 0 && consume {
		e.events.record(event{reason: eventShadow, username: c.Username, clientID: c.ClientID, targetType: c.TargetType,
			target: c.TargetName, gate: d.Shadow[0].DefinitionID})
	}
	return d, nil
}

// backendFailed applies the fail policy: a definition marked fail_closed,
// or the global FailClosed, denies; otherwise the call passes.
func (e *Enforcer) backendFailed(c Call, gates []Gate, err error) (Decision, error) {
	e.metrics.errors.WithLabelValues("counters").Inc()
	closed := e.opts.FailClosed
	for _, g := range gates {
		if g.failClosed && !g.Shadow {
			closed = true
		}
	}
	e.events.record(event{reason: eventBackend, failClosed: closed, target: c.TargetName, err: err})
	if closed {
		e.metrics.checks.WithLabelValues("fail_closed").Inc()
		return Decision{Allowed: false, Reason: ReasonFailClosed, Gates: gates, RetryAfter: time.Second}, err
	}
	e.metrics.checks.WithLabelValues("fail_open").Inc()
	return Decision{Allowed: true, Reason: ReasonFailOpen, Gates: gates}, err
}

// retryAfter rounds a wait up to whole seconds, at least one: a client
// that retries after it never arrives before the window has turned.
func retryAfter(wait time.Duration) time.Duration {
	secs := (wait + time.Second - 1) / time.Second
	return max(secs*time.Second, time.Second)
}

func outcome(room bool) string {
	if room {
		return "allow"
	}
	return "deny"
}

// axisLabel keeps the reference's short axis labels for metrics.
func axisLabel(axis string) string {
	switch axis {
	case ratelimit.AxisCaller:
		return "clr"
	case ratelimit.AxisCallerTarget:
		return "ctg"
	default:
		return "tgt"
	}
}
