package enforce

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
	"github.com/rlctl/rlctl/pkg/enforce/internal/tally"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// metrics are the enforcement series. Labels are bounded: no user, client
// or target names (those go to the log).
type metrics struct {
	checks           *prometheus.CounterVec   // outcome
	gateChecks       *prometheus.CounterVec   // axis, entity_type, outcome
	throttled        *prometheus.CounterVec   // axis, entity_type, window_seconds
	shadowDenied     *prometheus.CounterVec   // axis, entity_type, window_seconds
	quarantineDenied *prometheus.CounterVec   // scope, entity_type
	errors           *prometheus.CounterVec   // kind
	cache            *prometheus.CounterVec   // result
	backend          *prometheus.HistogramVec // backend, op, result
	backendTimeout   prometheus.Gauge
	enabled          prometheus.Gauge
	snapshotLoad     prometheus.Histogram
	notifications    prometheus.Counter
	swept            prometheus.Counter
	reloads          *prometheus.CounterVec // kind
	rowsRead         *prometheus.CounterVec // table

	// backendName is the counter store's backend label (backendName).
	backendName string

	// cacheHit is cache{result="hit"} and allowed checks{outcome="allowed"}:
	// every decision adds to them, into tallies.
	cacheHit, allowed tally.Counter
	// cacheHitSeries and allowedSeries are their series, which fold adds
	// the tallies to.
	cacheHitSeries, allowedSeries prometheus.Counter
	// gateSeries holds the gateChecks series resolved so far (gateSeries),
	// replaced whole under gateMu when one is added: a decision finds its
	// gates' series with no lock and no hashing. WithLabelValues takes the
	// vector's read lock, whose cache line two cores deciding in memory (a
	// lease layer's calls) fight over, and a sync.Map keyed by the two
	// labels hashed both strings through an interface on every gate: each
	// cost about a twentieth of such a decision's CPU
	// (BenchmarkLeaseHotKey/leases in pkg/enforce/lease).
	gateSeries atomic.Pointer[[]gateSeries]
	gateMu     sync.Mutex
	// tallies hold what every decision counts (allowed, cacheHit, the
	// first gate series' checks) until fold adds it to the series.
	tallies tally.Tallies
}

// gateSeries are the gateChecks series of one axis and entity type: deny,
// allow. slot is the first of their two tally slots (deny, allow), or -1
// when every slot was taken: they are then counted in the series at once.
type gateSeries struct {
	axis, entityType string
	counters         [2]prometheus.Counter
	slot             int
}

// gateChecked counts one check of g, with room or not.
func (m *metrics) gateChecked(g *Gate, room bool) {
	i := 0
	if room {
		i = 1
	}
	var s *gateSeries
	if p := m.gateSeries.Load(); p != nil {
		// Axis and entity type take a few values each: the list stays
		// short, and a comparison of unequal labels mostly stops at
		// their lengths.
		for k := range *p {
			if e := &(*p)[k]; e.axis == g.Axis && e.entityType == g.EntityType {
				s = e
				break
			}
		}
	}
	if s == nil {
		s = m.addGateSeries(g.Axis, g.EntityType)
	}
	if s.slot < 0 {
		s.counters[i].Inc()
		return
	}
	m.tallies.Add(s.slot + i)
}

// addGateSeries resolves the gateChecks series of axis and entityType and
// adds them to gateSeries (if another call has not meanwhile), with the
// next two tally slots while there are any.
func (m *metrics) addGateSeries(axis, entityType string) *gateSeries {
	m.gateMu.Lock()
	defer m.gateMu.Unlock()
	var old []gateSeries
	if p := m.gateSeries.Load(); p != nil {
		old = *p
	}
	for k := range old {
		if old[k].axis == axis && old[k].entityType == entityType {
			return &old[k]
		}
	}
	slot := firstGateSlot + 2*len(old)
	if slot+1 >= tally.Slots {
		slot = -1
	}
	next := make([]gateSeries, len(old), len(old)+1)
	copy(next, old)
	next = append(next, gateSeries{axis: axis, entityType: entityType, slot: slot, counters: [2]prometheus.Counter{
		m.gateChecks.WithLabelValues(AxisLabel(axis), entityType, outcome(false)),
		m.gateChecks.WithLabelValues(AxisLabel(axis), entityType, outcome(true))}})
	m.gateSeries.Store(&next)
	return &next[len(next)-1]
}

// The tally slots: allowed, cacheHit, then two per gate series (deny,
// allow); gate series past the slots are counted in the series directly.
const (
	slotAllowed   = 0
	slotCacheHit  = 1
	firstGateSlot = 2
)

// fold adds what the tallies counted to their series.
func (m *metrics) fold() {
	m.tallies.FoldInto(m.allowedSeries, slotAllowed)
	m.tallies.FoldInto(m.cacheHitSeries, slotCacheHit)
	if p := m.gateSeries.Load(); p != nil {
		for _, s := range *p {
			if s.slot >= 0 {
				m.tallies.FoldInto(s.counters[0], s.slot)
				m.tallies.FoldInto(s.counters[1], s.slot+1)
			}
		}
	}
}

func newMetrics(reg prometheus.Registerer, count countQuarantined, now func() time.Time, backend string) (*metrics, error) {
	m := &metrics{backendName: backend,
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_checks_total",
			Help: "Decisions by outcome: allowed, throttled, quarantined, fail_open, fail_closed, skipped (control plane), enforcement_off (master switch off)."}, []string{"outcome"}),
		gateChecks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_gate_checks_total",
			Help: "Gate checks by axis (clr, ctg, tgt), entity type and outcome (allow, deny)."}, []string{"axis", "entity_type", "outcome"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_throttled_total",
			Help: "Enforce gates that denied a call, by axis, entity type and window."}, []string{"axis", "entity_type", "window_seconds"}),
		shadowDenied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_shadow_would_deny_total",
			Help: "Shadow gates that would have denied a call, by axis, entity type and window."}, []string{"axis", "entity_type", "window_seconds"}),
		quarantineDenied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_quarantine_denied_total",
			Help: "Calls denied by quarantine, by scope (caller, target) and the quarantined subject's type (caller: user, client; target: mcp_server, a2a_agent)."},
			[]string{"scope", "entity_type"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_errors_total",
			Help: "Backend errors by kind: counters (fail policy applied), snapshot (reload failed), listen."}, []string{"kind"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_cache_total",
			Help: "Snapshot reads: hit (fresh snapshot used), miss (none or too old)."}, []string{"result"}),
		backend: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rlctl_enforce_backend_duration_seconds",
			Help:    "Latency of the counter round trip, by backend (postgres, redis, redis-cluster, memory, or the store's type), op (take: counts; peek: reads only) and result (ok, error, timeout, shed).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .2, .25, .5}}, []string{"backend", "op", "result"}),
		backendTimeout: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rlctl_enforce_backend_timeout_seconds",
			Help: "The deadline of each counter round trip (Options.BackendTimeout): alert when the latency nears it."}),
		enabled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rlctl_enforce_enabled",
			Help: "1 while enforcement is on, 0 while the master switch (PUT /api/enforcement) is off, as this replica's snapshot has it."}),
		snapshotLoad: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rlctl_enforce_snapshot_load_seconds",
			Help: "Time to load definitions, memberships and admins.", Buckets: prometheus.DefBuckets}),
		notifications: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlctl_enforce_notifications_total",
			Help: "Change notifications received."}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlctl_enforce_counters_swept_total",
			Help: "Expired counter rows removed by this replica."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_snapshot_reloads_total",
			Help: "Snapshot reloads by kind: full (everything read), partial (only the rows change notifications named)."}, []string{"kind"}),
		rowsRead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_snapshot_rows_read_total",
			Help: "Rows read by snapshot reloads, by table (definitions, memberships, admins)."}, []string{"table"}),
	}
	m.cacheHitSeries, m.allowedSeries = m.cache.WithLabelValues("hit"), m.checks.WithLabelValues("allowed")
	m.tallies = tally.New()
	m.cacheHit, m.allowed = m.tallies.CounterAt(slotCacheHit), m.tallies.CounterAt(slotAllowed)
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{tally.Folding{Fold: m.fold, Collectors: []prometheus.Collector{m.checks, m.gateChecks, m.cache}}, m.throttled, m.shadowDenied, m.quarantineDenied,
		m.errors, m.backend, m.snapshotLoad, m.notifications, m.swept, m.reloads, m.rowsRead, m.backendTimeout, m.enabled,
		newQuarantineCollector(count, now)} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}

// reloaded records one snapshot reload (internal/snapshot's
// Hooks.Reloaded).
func (m *metrics) reloaded(full bool, n snapshots.RowsRead, took time.Duration, enforcementOff bool) {
	kind := "partial"
	if full {
		kind = "full"
	}
	m.reloads.WithLabelValues(kind).Inc()
	m.rowsRead.WithLabelValues("definitions").Add(float64(n.Definitions))
	m.rowsRead.WithLabelValues("memberships").Add(float64(n.Memberships))
	m.rowsRead.WithLabelValues("admins").Add(float64(n.Admins))
	if enforcementOff {
		m.enabled.Set(0)
	} else {
		m.enabled.Set(1)
	}
	m.snapshotLoad.Observe(took.Seconds())
}

// observeBackend records one counter round trip.
func (m *metrics) observeBackend(consume bool, err error, d time.Duration) {
	op, result := "take", "ok"
	if !consume {
		op = "peek"
	}
	switch {
	case errors.Is(err, ErrOverloaded):
		result = "shed"
	case errors.Is(err, context.DeadlineExceeded):
		result = "timeout"
	case err != nil:
		result = "error"
	}
	m.backend.WithLabelValues(m.backendName, op, result).Observe(d.Seconds())
}

// countQuarantined counts the subjects quarantined at now, by scope.
type countQuarantined func(ctx context.Context, now time.Time) (callers, targets int64, err error)

// quarantineCount asks the source when it declares it counts
// (SourceCapabilities.CountQuarantined: the PostgreSQL source reads the
// database, the same on every replica), else counts the snapshot's
// memberships.
func (e *Enforcer) quarantineCount(ctx context.Context, now time.Time) (callers, targets int64, err error) {
	if e.source.Capabilities().CountQuarantined {
		return e.source.CountQuarantined(ctx, now)
	}
	s := e.snaps.Current()
	if s == nil {
		return 0, 0, errors.New("no snapshot")
	}
	s.Members.Each(func(_ string, m plan.Member) bool {
		if !m.QuarantinedAt(now) {
			return true
		}
		for _, g := range m.Groups {
			switch g {
			case ratelimit.GroupQuarantineCallers:
				callers++
			case ratelimit.GroupQuarantineTargets:
				targets++
			}
		}
		return true
	})
	s.Networks.Each(func(_ netip.Prefix, m plan.Member) bool {
		if m.QuarantinedAt(now) {
			callers++
		}
		return true
	})
	return callers, targets, nil
}

// quarantineCollector reports how many subjects are quarantined now, per
// scope, counted at scrape time and never on the request path (the
// reference's quarantine_members).
type quarantineCollector struct {
	count countQuarantined
	now   func() time.Time
	desc  *prometheus.Desc
}

func newQuarantineCollector(count countQuarantined, now func() time.Time) *quarantineCollector {
	return &quarantineCollector{count: count, now: now, desc: prometheus.NewDesc("rlctl_enforce_quarantined_subjects",
		"Subjects whose quarantine applies now, by scope (caller: users and clients; target: servers and agents). Absent while the database does not answer.",
		[]string{"scope"}, nil)}
}

func (c *quarantineCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *quarantineCollector) Collect(ch chan<- prometheus.Metric) {
	if c.count == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	callers, targets, err := c.count(ctx, c.now())
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(callers), "caller")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(targets), "target")
}
