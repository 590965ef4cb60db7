package enforce

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the enforcement series. Labels are bounded: no user, client
// or target names (those go to the log).
type metrics struct {
	checks           *prometheus.CounterVec // outcome
	gateChecks       *prometheus.CounterVec // axis, entity_type, outcome
	throttled        *prometheus.CounterVec // axis, entity_type, window_seconds
	shadowDenied     *prometheus.CounterVec // axis, entity_type, window_seconds
	quarantineDenied *prometheus.CounterVec // scope
	errors           *prometheus.CounterVec // kind
	cache            *prometheus.CounterVec // result
	backend          prometheus.Histogram
	snapshotLoad     prometheus.Histogram
	notifications    prometheus.Counter
	swept            prometheus.Counter
	reloads          *prometheus.CounterVec // kind
	rowsRead         *prometheus.CounterVec // table
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_checks_total",
			Help: "Decisions by outcome: allowed, throttled, quarantined, fail_open, fail_closed, skipped (control plane)."}, []string{"outcome"}),
		gateChecks: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_gate_checks_total",
			Help: "Gate checks by axis (clr, ctg, tgt), entity type and outcome (allow, deny)."}, []string{"axis", "entity_type", "outcome"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_throttled_total",
			Help: "Enforce gates that denied a call, by axis, entity type and window."}, []string{"axis", "entity_type", "window_seconds"}),
		shadowDenied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_shadow_would_deny_total",
			Help: "Shadow gates that would have denied a call, by axis, entity type and window."}, []string{"axis", "entity_type", "window_seconds"}),
		quarantineDenied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_quarantine_denied_total",
			Help: "Calls denied by quarantine, by scope (caller, target)."}, []string{"scope"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_errors_total",
			Help: "Backend errors by kind: counters (fail policy applied), snapshot (reload failed), listen."}, []string{"kind"}),
		cache: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_cache_total",
			Help: "Snapshot reads: hit (fresh snapshot used), miss (none or too old)."}, []string{"result"}),
		backend: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rlctl_enforce_backend_duration_seconds",
			Help:    "Latency of the counter round trip.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5}}),
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
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.checks, m.gateChecks, m.throttled, m.shadowDenied, m.quarantineDenied,
		m.errors, m.cache, m.backend, m.snapshotLoad, m.notifications, m.swept, m.reloads, m.rowsRead} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	return m, nil
}
