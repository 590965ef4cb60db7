// Package degrade is the fail policy degrade (ratelimit.FailPolicyDegrade)
// as an enforce.Fallback: while the counter store cannot be reached, each
// gate is counted in this replica's memory (pkg/enforce/memory's store,
// the same algorithms) on its share of the limit, ceil(limit / live
// replicas), so that N replicas together admit about one limit; once the
// store answers again, what was admitted locally is written to the shared
// counters before the replica decides on them again, so that the window
// does not admit its limit a second time (docs/operations.md, "Degraded
// mode", states the bound).
//
// The core never imports this package: a gateway or rlapi builds a
// Fallback over the counter store it gives the Enforcer and passes it as
// enforce.Options.Fallback.
package degrade

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// Options tune a Fallback.
type Options struct {
	// Counters is the shared counter store the Enforcer counts on
	// (required): the reports are written to it. Over pkg/enforce/lease's
	// layer, give the store it wraps.
	Counters enforce.CounterStore
	// Replicas is how many live replicas share the counters (required),
	// read at each local decision; below 1 counts as 1. rlapi gives a
	// configured count (--replicas); a live count can replace it.
	Replicas func() int
	// Timeout bounds each report's round trip (default 250 ms, the
	// Enforcer's default BackendTimeout).
	Timeout time.Duration
	// ProbeInterval is how often, while degraded, the Fallback tries to
	// report on its own, without waiting for a call to ask the store
	// (default 1 s; negative: never, calls alone report).
	ProbeInterval time.Duration
	// Settle is how long, once the store has answered a report, the
	// replica still decides locally (reporting what it admits meanwhile)
	// before it decides on the shared counters again: long enough for
	// every other replica's probe to have written its report, so that the
	// shared counters hold every replica's admissions when any of them
	// decides there again (default 2 × ProbeInterval + Timeout; without
	// a probe, 0; negative: 0). Real time, not Now: it waits for the
	// other replicas' probes.
	Settle time.Duration
	// MaxKeys bounds the local counters (memory.Options.MaxKeys).
	MaxKeys int
	// Now is the clock; give the Enforcer's (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
}

// errSettling is Report's answer while the replica settles (Options.Settle):
// the store answers, and the call is still decided locally.
var errSettling = errors.New("degrade: the counter store is back; deciding locally until every replica has reported")

// reportBatch bounds the reports written in one round trip.
const reportBatch = 256

// probeKey is the counter a report with nothing to write peeks at, to
// learn that the store answers again; a peek writes nothing.
const probeKey = "rlctl-degrade-probe"

// Fallback is the degraded mode's local counters and the reports still
// owed to the shared ones. It is safe for concurrent use.
type Fallback struct {
	opts    Options
	local   *memory.Store
	log     *slog.Logger
	metrics metrics

	// degraded: decided locally since the last report the store
	// answered (Pending). Set under mu, read without it.
	degraded atomic.Bool

	mu sync.Mutex
	// pending is what was admitted locally and not yet reported, per
	// counter and window.
	pending map[slot]*owed
	// flight is the report being written, which others wait for.
	flight *flight
	// back is when the store first answered a report after an outage
	// (real time; zero: not yet): the settling starts there.
	back time.Time

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// slot names one counter's window: a token bucket has one (index 0).
type slot struct {
	key    string
	window int64
}

// owed is what one counter's window admitted locally.
type owed struct {
	gate  enforce.CounterGate // as the Enforcer gave it: the whole limit
	units int64
	last  time.Time // the last admission
}

// flight is one report being written; done closes when err is set.
type flight struct {
	done chan struct{}
	err  error
}

// New returns a Fallback over opts.Counters, with its probe running until
// Close.
func New(opts Options) (*Fallback, error) {
	if opts.Counters == nil || opts.Replicas == nil {
		return nil, errors.New("degrade: Options.Counters and Options.Replicas are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 250 * time.Millisecond
	}
	if opts.ProbeInterval == 0 {
		opts.ProbeInterval = time.Second
	}
	switch {
	case opts.Settle < 0 || (opts.Settle == 0 && opts.ProbeInterval < 0):
		opts.Settle = 0
	case opts.Settle == 0:
		opts.Settle = 2*opts.ProbeInterval + opts.Timeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	f := &Fallback{opts: opts, local: memory.New(memory.Options{MaxKeys: opts.MaxKeys}), log: opts.Logger,
		pending: map[slot]*owed{}}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	f.metrics = m
	bg, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	if opts.ProbeInterval > 0 {
		f.wg.Go(func() { f.probe(bg) })
	}
	return f, nil
}

// Close stops the probe. What is still owed is not written.
func (f *Fallback) Close() {
	f.cancel()
	f.wg.Wait()
}

// Replicas is the live replica count the shares are computed with now
// (at least 1).
func (f *Fallback) Replicas() int { return max(f.opts.Replicas(), 1) }

// Degraded reports whether this replica decides locally now: it has
// decided a call locally since the store last answered a report.
func (f *Fallback) Degraded() bool { return f.degraded.Load() }

// Pending is Degraded (enforce.Fallback): while it holds, the Enforcer
// asks for a Report before each decision on the shared counters.
func (f *Fallback) Pending() bool { return f.degraded.Load() }

// Share is this replica's share of a limit among n replicas:
// ceil(limit / n), at least 1 for a positive limit.
func Share(limit int64, n int) int64 {
	if n <= 1 || limit <= 0 {
		return limit
	}
	return (limit + int64(n) - 1) / int64(n)
}

// Take decides req on the local counters (enforce.Fallback), each gate's
// Limit (a token bucket's Limit and Burst) its share, which it writes
// into req.Gates; what it admits is owed to the shared counters.
func (f *Fallback) Take(req enforce.TakeRequest) enforce.TakeResult {
	whole := slices.Clone(req.Gates)
	n := f.Replicas()
	for i := range req.Gates {
		g := &req.Gates[i]
		if g.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
			burst := g.Burst
			if burst == 0 {
				burst = g.Limit
			}
			g.Burst = Share(burst, n)
		}
		g.Limit = Share(g.Limit, n)
	}
	f.enter()
	res, err := f.local.Take(context.Background(), []enforce.TakeRequest{req}, time.Time{})
	if err != nil {
		// The Enforcer's gates are always countable; a request that is
		// not is refused rather than admitted uncounted.
		f.metrics.decisions.WithLabelValues("throttled").Inc()
		return enforce.TakeResult{Room: make([]bool, len(req.Gates)), States: make([]enforce.GateState, len(req.Gates))}
	}
	if !res[0].Allowed {
		f.metrics.decisions.WithLabelValues("throttled").Inc()
		return res[0]
	}
	f.metrics.decisions.WithLabelValues("allowed").Inc()
	if req.Consume {
		f.owe(whole, req.Cost, req.Now)
	}
	return res[0]
}

// enter marks the replica degraded, logging the change once.
func (f *Fallback) enter() {
	if f.degraded.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.degraded.Swap(true) {
		return
	}
	f.metrics.degraded.Set(1)
	f.log.Warn("counter store unreachable: deciding degrade-policy gates on this replica's share of each limit",
		"replicas", f.Replicas())
}

// owe records what a call admitted locally on gates. A report that
// ended the degraded mode between the call's enter and here would leave
// it owed and unreported: the mode is entered again, so that it is
// reported before the next shared decision.
func (f *Fallback) owe(gates []enforce.CounterGate, cost int64, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.degraded.Swap(true) {
		f.metrics.degraded.Set(1)
	}
	for _, g := range gates {
		s := slot{key: g.Key}
		if g.KnownAlgorithm() != enforce.AlgorithmTokenBucket {
			s.window = algorithm.WindowIndex(now, g.Window)
		}
		o := f.pending[s]
		if o == nil {
			o = &owed{gate: g}
			f.pending[s] = o
		}
		o.gate, o.units, o.last = g, o.units+cost, now
	}
}

// Report writes what is owed to the shared counters (enforce.Fallback).
// One report is written at a time; a call that finds one being written
// waits for it, and writes what was owed meanwhile after it. When nothing
// is left owed and the store answered, the degraded mode ends.
func (f *Fallback) Report(ctx context.Context) error {
	for {
		f.mu.Lock()
		if !f.degraded.Load() {
			f.mu.Unlock()
			return nil
		}
		if fl := f.flight; fl != nil {
			f.mu.Unlock()
			select {
			case <-fl.done:
			case <-ctx.Done():
				return ctx.Err()
			}
			if fl.err != nil {
				return fl.err
			}
			continue
		}
		fl := &flight{done: make(chan struct{})}
		f.flight = fl
		batch := f.pending
		f.pending = map[slot]*owed{}
		f.mu.Unlock()

		left, written, err := f.write(ctx, batch)

		f.mu.Lock()
		for s, o := range left {
			if p := f.pending[s]; p != nil {
				p.units += o.units
			} else {
				f.pending[s] = o
			}
		}
		switch {
		case err != nil:
			f.back = time.Time{}
		case f.back.IsZero() && f.opts.Settle > 0:
			f.back = time.Now()
			err = errSettling
		case time.Since(f.back) < f.opts.Settle:
			err = errSettling
		case len(f.pending) == 0:
			f.back = time.Time{}
			f.degraded.Store(false)
			f.metrics.degraded.Set(0)
			f.log.Info("counter store back: local admissions reported, deciding on the shared counters again",
				"reports", written)
		}
		fl.err = err
		f.flight = nil
		close(fl.done)
		f.mu.Unlock()
		if err != nil {
			return err
		}
	}
}

// write writes batch to the shared counters: each counter's window as
// one call of cost = what it admitted, on a gate made unable to refuse
// (unrefusable); windows already over are dropped, and a token bucket's
// debt shrinks by what has dripped back since the last admission. With
// nothing to write it peeks at one counter, to learn whether the store
// answers. It returns what it could not write.
func (f *Fallback) write(ctx context.Context, batch map[slot]*owed) (left map[slot]*owed, written int, err error) {
	now := f.opts.Now()
	type report struct {
		s   slot
		o   *owed
		req enforce.TakeRequest
	}
	var reports []report
	for s, o := range batch {
		units := o.units
		if o.gate.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
			T := algorithm.Interval(o.gate.Window, o.gate.Limit)
			units -= int64(now.Sub(o.last)) / T
		} else if algorithm.WindowIndex(now, o.gate.Window) != s.window {
			units = 0
		}
		if units <= 0 {
			f.metrics.reports.WithLabelValues("dropped").Inc()
			continue
		}
		reports = append(reports, report{s, o, enforce.TakeRequest{Gates: []enforce.CounterGate{unrefusable(o.gate)},
			Cost: units, Consume: true, Now: now}})
	}
	if len(reports) == 0 {
		peek := enforce.TakeRequest{Gates: []enforce.CounterGate{{Key: probeKey, Algorithm: enforce.AlgorithmFixedWindow,
			Window: time.Second, Limit: 1, Enforce: true}}, Cost: 1, Now: now}
		_, err := f.opts.Counters.Take(ctx, []enforce.TakeRequest{peek}, time.Now().Add(f.opts.Timeout))
		return nil, 0, err
	}
	for start := 0; start < len(reports); start += reportBatch {
		chunk := reports[start:min(start+reportBatch, len(reports))]
		reqs := make([]enforce.TakeRequest, len(chunk))
		for i, r := range chunk {
			reqs[i] = r.req
		}
		res, err := f.opts.Counters.Take(ctx, reqs, time.Now().Add(f.opts.Timeout))
		if err == nil && len(res) != len(reqs) {
			err = errors.New("degrade: the counter store answered a different number of reports")
		}
		if err != nil {
			left = map[slot]*owed{}
			for _, r := range reports[start:] {
				left[r.s] = r.o
			}
			f.metrics.reports.WithLabelValues("failed").Add(float64(len(reports) - start))
			return left, written, err
		}
		for i, r := range res {
			if r.Allowed {
				written++
				f.metrics.reports.WithLabelValues("written").Inc()
				continue
			}
			// Cannot happen with an unrefusable gate; not retried, as
			// it would be refused again.
			f.metrics.reports.WithLabelValues("refused").Inc()
			f.log.Warn("the counter store refused a degraded-mode report", "key", chunk[i].s.key, "units", chunk[i].req.Cost)
		}
	}
	return nil, written, nil
}

// unrefusable is g raised so that a report always fits: a window's limit
// far above any count (a sliding window's low enough that limit × window
// in ms stays within int64), a token bucket's burst as deep as the
// arithmetic allows, so its TAT still moves by cost × its interval.
func unrefusable(g enforce.CounterGate) enforce.CounterGate {
	g.Enforce = true
	switch g.KnownAlgorithm() {
	case enforce.AlgorithmTokenBucket:
		g.Burst = math.MaxInt64 / 4
	case enforce.AlgorithmSlidingWindow:
		g.Limit = math.MaxInt64 / 4 / max(g.Window.Milliseconds(), 1)
	default:
		g.Limit = math.MaxInt64 / 4
	}
	return g
}

// probe tries to report every ProbeInterval while degraded, so that a
// replica that no call reaches still reports soon after the store is
// back.
func (f *Fallback) probe(ctx context.Context) {
	t := time.NewTicker(f.opts.ProbeInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if f.Pending() {
				_ = f.Report(ctx) // a failure stays pending; the next tick retries
			}
		}
	}
}

// Owed is how many units are owed to the shared counters now, over every
// counter and window (for tests and status).
func (f *Fallback) Owed() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, o := range f.pending {
		n += o.units
	}
	return n
}

// metrics are the degraded mode's series.
type metrics struct {
	decisions *prometheus.CounterVec
	degraded  prometheus.Gauge
	reports   *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (metrics, error) {
	m := metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_degraded_decisions_total",
			Help: "Calls decided on this replica's local counters while the counter store was unreachable (fail policy degrade), by outcome."},
			[]string{"outcome"}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rlctl_enforce_degraded",
			Help: "1 while this replica decides degrade-policy gates locally (the counter store unreachable, or its report not yet written)."}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_degraded_reports_total",
			Help: "Reports of local admissions to the shared counters, by result: written, failed (kept and retried), refused, dropped (the window was over)."},
			[]string{"result"}),
	}
	for _, o := range []string{"allowed", "throttled"} {
		m.decisions.WithLabelValues(o)
	}
	for _, r := range []string{"written", "failed", "refused", "dropped"} {
		m.reports.WithLabelValues(r)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.decisions, m.degraded, m.reports} {
			if err := reg.Register(c); err != nil {
				return metrics{}, err
			}
		}
	}
	return m, nil
}
