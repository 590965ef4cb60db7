// Package metrics holds the series an Enforcer's decisions are counted
// in, rlctl_enforce_*: what each counts, its labels (bounded: no user,
// client or target names, which go to the log) and how the hottest are
// tallied per goroutine and folded in at scrape time (internal/tally).
package metrics

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
	"github.com/rlctl/rlctl/pkg/enforce/internal/tally"
	"github.com/rlctl/rlctl/pkg/enforce/plan"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Metrics are the enforcement series.
type Metrics struct {
	Checks           *prometheus.CounterVec   // outcome
	GateChecks       *prometheus.CounterVec   // axis, entity_type, outcome
	Throttled        *prometheus.CounterVec   // axis, entity_type, window_seconds
	ShadowDenied     *prometheus.CounterVec   // axis, entity_type, window_seconds
	QuarantineDenied *prometheus.CounterVec   // scope, entity_type
	Errors           *prometheus.CounterVec   // kind
	Cache            *prometheus.CounterVec   // result
	Backend          *prometheus.HistogramVec // backend, op, result
	BackendTimeout   prometheus.Gauge
	Enabled          prometheus.Gauge
	SnapshotLoad     prometheus.Histogram
	Notifications    prometheus.Counter
	Swept            prometheus.Counter
	Reloads          *prometheus.CounterVec // kind
	RowsRead         *prometheus.CounterVec // table

	// backendName is the counter store's backend label (backendName).
	backendName string

	// cacheHit is cache{result="hit"} and allowed checks{outcome="allowed"}:
	// every decision adds to them, into tallies.
	CacheHit, Allowed tally.Counter
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

// GateChecked counts one check of g, with room or not.
func (m *Metrics) GateChecked(g *plan.Gate, room bool) {
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
func (m *Metrics) addGateSeries(axis, entityType string) *gateSeries {
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
		m.GateChecks.WithLabelValues(AxisLabel(axis), entityType, outcome(false)),
		m.GateChecks.WithLabelValues(AxisLabel(axis), entityType, outcome(true))}})
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
func (m *Metrics) fold() {
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

// New registers the series with reg (nil: none). count counts the
// subjects quarantined now, for the gauge read at scrape time; backend is
// the counter store's backend label.
func New(reg prometheus.Registerer, count CountQuarantined, now func() time.Time, backend string) (*Metrics, error) {
	m := &Metrics{backendName: backend,
		Checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_checks_total",
			Help: "Decisions by outcome: allowed, throttled, quarantined, fail_open, fail_closed, skipped (control plane), enforcement_off (master switch off)."}, []string{"outcome"}),
		GateChecks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_gate_checks_total",
			Help: "Gate checks by axis (clr, ctg, tgt), entity type and outcome (allow, deny)."}, []string{"axis", "entity_type", "outcome"}),
		Throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_throttled_total",
			Help: "Enforce gates that denied a call, by axis, entity type and window."}, []string{"axis", "entity_type", "window_seconds"}),
		ShadowDenied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_shadow_would_deny_total",
			Help: "Shadow gates that would have denied a call, by axis, entity type and window."}, []string{"axis", "entity_type", "window_seconds"}),
		QuarantineDenied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_quarantine_denied_total",
			Help: "Calls denied by quarantine, by scope (caller, target) and the quarantined subject's type (caller: user, client; target: mcp_server, a2a_agent)."},
			[]string{"scope", "entity_type"}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_errors_total",
			Help: "Backend errors by kind: counters (fail policy applied), snapshot (reload failed), listen."}, []string{"kind"}),
		Cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_cache_total",
			Help: "Snapshot reads: hit (fresh snapshot used), miss (none or too old)."}, []string{"result"}),
		Backend: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "rlctl_enforce_backend_duration_seconds",
			Help:    "Latency of the counter round trip, by backend (postgres, redis, redis-cluster, memory, or the store's type), op (take: counts; peek: reads only) and result (ok, error, timeout, shed).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .2, .25, .5}}, []string{"backend", "op", "result"}),
		BackendTimeout: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rlctl_enforce_backend_timeout_seconds",
			Help: "The deadline of each counter round trip (Options.BackendTimeout): alert when the latency nears it."}),
		Enabled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "rlctl_enforce_enabled",
			Help: "1 while enforcement is on, 0 while the master switch (PUT /api/enforcement) is off, as this replica's snapshot has it."}),
		SnapshotLoad: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rlctl_enforce_snapshot_load_seconds",
			Help: "Time to load definitions, memberships and admins.", Buckets: prometheus.DefBuckets}),
		Notifications: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlctl_enforce_notifications_total",
			Help: "Change notifications received."}),
		Swept: prometheus.NewCounter(prometheus.CounterOpts{Name: "rlctl_enforce_counters_swept_total",
			Help: "Expired counter rows removed by this replica."}),
		Reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_snapshot_reloads_total",
			Help: "Snapshot reloads by kind: full (everything read), partial (only the rows change notifications named)."}, []string{"kind"}),
		RowsRead: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_snapshot_rows_read_total",
			Help: "Rows read by snapshot reloads, by table (definitions, memberships, admins)."}, []string{"table"}),
	}
	m.cacheHitSeries, m.allowedSeries = m.Cache.WithLabelValues("hit"), m.Checks.WithLabelValues("allowed")
	m.tallies = tally.New()
	m.CacheHit, m.Allowed = m.tallies.CounterAt(slotCacheHit), m.tallies.CounterAt(slotAllowed)
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{tally.Folding{Fold: m.fold, Collectors: []prometheus.Collector{m.Checks, m.GateChecks, m.Cache}}, m.Throttled, m.ShadowDenied, m.QuarantineDenied,
		m.Errors, m.Backend, m.SnapshotLoad, m.Notifications, m.Swept, m.Reloads, m.RowsRead, m.BackendTimeout, m.Enabled,
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

// Reloaded records one snapshot reload (internal/snapshot's
// Hooks.Reloaded).
func (m *Metrics) Reloaded(full bool, n snapshots.RowsRead, took time.Duration, enforcementOff bool) {
	kind := "partial"
	if full {
		kind = "full"
	}
	m.Reloads.WithLabelValues(kind).Inc()
	m.RowsRead.WithLabelValues("definitions").Add(float64(n.Definitions))
	m.RowsRead.WithLabelValues("memberships").Add(float64(n.Memberships))
	m.RowsRead.WithLabelValues("admins").Add(float64(n.Admins))
	if enforcementOff {
		m.Enabled.Set(0)
	} else {
		m.Enabled.Set(1)
	}
	m.SnapshotLoad.Observe(took.Seconds())
}

// ObserveBackend records one counter round trip: a take (consume) or a
// peek, whose result is ok, error, timeout or shed.
func (m *Metrics) ObserveBackend(consume bool, result string, d time.Duration) {
	op := "take"
	if !consume {
		op = "peek"
	}
	m.Backend.WithLabelValues(m.backendName, op, result).Observe(d.Seconds())
}

// quarantineCollector reports how many subjects are quarantined now, per
// scope, counted at scrape time and never on the request path (the
// reference's quarantine_members).
type quarantineCollector struct {
	count CountQuarantined
	now   func() time.Time
	desc  *prometheus.Desc
}

func newQuarantineCollector(count CountQuarantined, now func() time.Time) *quarantineCollector {
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

// CountQuarantined counts the subjects quarantined at now, by scope.
type CountQuarantined func(ctx context.Context, now time.Time) (callers, targets int64, err error)

// AxisLabel is an axis's label in the metrics (clr, ctg, tgt): short, and
// the same in the core's series and those of the features built beside it
// (the record of violations).
func AxisLabel(axis string) string {
	switch axis {
	case ratelimit.AxisCaller:
		return "clr"
	case ratelimit.AxisCallerTarget:
		return "ctg"
	default:
		return "tgt"
	}
}

func outcome(room bool) string {
	if room {
		return "allow"
	}
	return "deny"
}
