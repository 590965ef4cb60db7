package envoyrls

import (
	"strings"
	"sync"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// metrics count descriptors with bounded labels: the domain and the keys
// of the definition a descriptor matched (both from the definitions, never
// from what a request may invent: an unknown domain is "unknown", a
// descriptor that matched nothing is "unmatched"). Values are labels only
// for definitions marked detailed_metric (or value_to_metric), in a
// metric of their own.
type metrics struct {
	descriptors *prometheus.CounterVec
	detailed    *prometheus.CounterVec
	refused     *prometheus.CounterVec
	// series caches the descriptors' counters by what picks their labels
	// (seriesKey), so that the hot path neither joins keys nor hashes
	// labels. It holds no more than the vector does: one entry per
	// series.
	series sync.Map // seriesKey -> prometheus.Counter
}

// seriesKey picks a descriptor's series: the domain label, the name of
// the definition matched ("" for none: "unmatched") and the code.
type seriesKey struct {
	domain, name string
	over         bool
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		descriptors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlctl_envoy_descriptors_total",
			Help: "Descriptors of ShouldRateLimit requests, by domain, the keys of the definition matched and the code answered.",
		}, []string{"domain", "keys", "code"}),
		detailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlctl_envoy_descriptor_values_total",
			Help: "Descriptors that matched a definition marked detailed_metric, by domain, the request's descriptor (values included) and code.",
		}, []string{"domain", "descriptor", "code"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rlctl_envoy_requests_refused_total",
			Help: "ShouldRateLimit requests answered with an error status, by gRPC code.",
		}, []string{"code"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.descriptors, m.detailed, m.refused} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *metrics) observe(r *enforce.DescriptorRequest, matches []enforce.DescriptorMatch, resp *rlsv3.RateLimitResponse) {
	for i, st := range resp.Statuses {
		k := seriesKey{domain: "unknown", over: st.Code == rlsv3.RateLimitResponse_OVER_LIMIT}
		var def *ratelimit.Definition
		var detailed bool
		if i < len(matches) && matches[i].Known {
			k.domain = r.Domain
			if defs := matches[i].Definitions; len(defs) > 0 {
				def = &defs[0]
				k.name = def.Name
				for _, d := range defs {
					detailed = detailed || d.DetailedMetric || d.ValueToMetric
				}
			}
		}
		c, ok := m.series.Load(k)
		if !ok {
			keys := "unmatched"
			if def != nil {
				ks := make([]string, len(def.Descriptor))
				for j, e := range def.Descriptor {
					ks[j] = e.Key
				}
				keys = strings.Join(ks, ".")
			}
			c, _ = m.series.LoadOrStore(k, m.descriptors.WithLabelValues(k.domain, keys, codeLabel(k.over)))
		}
		c.(prometheus.Counter).Inc()
		if detailed {
			m.detailed.WithLabelValues(k.domain, ratelimit.DescriptorCounterPath(r.Domain, r.Descriptors[i].Entries, nil), codeLabel(k.over)).Inc()
		}
	}
}

func codeLabel(over bool) string {
	if over {
		return "over_limit"
	}
	return "ok"
}
