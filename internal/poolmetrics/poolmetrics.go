// Package poolmetrics exports a PostgreSQL connection pool's statistics to
// Prometheus. rlapi registers it for its management pool; it lives apart
// from internal/api, which links no database driver of its own.
package poolmetrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector reports a pgx pool's statistics at scrape time, as the
// rlapi_db_pool_* series.
type Collector struct {
	pool                                        *pgxpool.Pool
	total, idle, inUse, max, acquires, waitSecs *prometheus.Desc
	emptyAcquires, canceledAcquires             *prometheus.Desc
}

// New returns the collector of pool; register it once per registry.
func New(pool *pgxpool.Pool) *Collector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("rlapi_db_pool_"+name, help, nil, nil)
	}
	return &Collector{
		pool:             pool,
		total:            d("connections", "Open connections."),
		idle:             d("idle_connections", "Idle connections."),
		inUse:            d("acquired_connections", "Connections in use."),
		max:              d("max_connections", "Pool size limit."),
		acquires:         d("acquires_total", "Connections acquired."),
		waitSecs:         d("acquire_wait_seconds_total", "Time spent waiting for a connection."),
		emptyAcquires:    d("empty_acquires_total", "Acquires that had to wait for a connection."),
		canceledAcquires: d("canceled_acquires_total", "Acquires canceled while waiting."),
	}
}

func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.idle, c.inUse, c.max, c.acquires, c.waitSecs, c.emptyAcquires, c.canceledAcquires} {
		ch <- d
	}
}

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.pool.Stat()
	ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(st.TotalConns()))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(st.IdleConns()))
	ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(st.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(c.max, prometheus.GaugeValue, float64(st.MaxConns()))
	ch <- prometheus.MustNewConstMetric(c.acquires, prometheus.CounterValue, float64(st.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.waitSecs, prometheus.CounterValue, st.AcquireDuration().Seconds())
	ch <- prometheus.MustNewConstMetric(c.emptyAcquires, prometheus.CounterValue, float64(st.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(c.canceledAcquires, prometheus.CounterValue, float64(st.CanceledAcquireCount()))
}
