package lease

import "github.com/prometheus/client_golang/prometheus"

// collector reports a Store's leases at scrape time, from the counts the
// leases keep (nothing is added to a shared metric on the decision path).
// The Enforcer's own series count the calls a Store decided like any other:
// rlctl_enforce_checks_total and rlctl_enforce_gate_checks_total.
type collector struct {
	s                                *Store
	leases, blocks, returned, locals *prometheus.Desc
}

func newCollector(s *Store) *collector {
	return &collector{s: s,
		leases: prometheus.NewDesc("rlctl_enforce_leases",
			"Leases for hot keys this replica holds now.", nil, nil),
		blocks: prometheus.NewDesc("rlctl_enforce_lease_blocks_total",
			"Blocks of a gate's capacity taken from the shared counter for leases.", nil, nil),
		returned: prometheus.NewDesc("rlctl_enforce_lease_returned_units_total",
			"Units of leased blocks given back to the shared counter unused.", nil, nil),
		locals: prometheus.NewDesc("rlctl_enforce_lease_local_decisions_total",
			"Calls whose every gate was decided from a leased block, without a counter round trip.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.leases
	ch <- c.blocks
	ch <- c.returned
	ch <- c.locals
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.s.flushMetrics()
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(c.leases, prometheus.GaugeValue, float64(st.Leases))
	ch <- prometheus.MustNewConstMetric(c.blocks, prometheus.CounterValue, float64(st.Refills))
	ch <- prometheus.MustNewConstMetric(c.returned, prometheus.CounterValue, float64(st.Returned))
	ch <- prometheus.MustNewConstMetric(c.locals, prometheus.CounterValue, float64(c.s.decided.Load()))
}
