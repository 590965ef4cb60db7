package envoyrls

import (
	"strings"

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
		code := "ok"
		if st.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
			code = "over_limit"
		}
		domain, keys := "unknown", "unmatched"
		var detailed bool
		if i < len(matches) && matches[i].Known {
			domain = r.Domain
			if defs := matches[i].Definitions; len(defs) > 0 {
				ks := make([]string, len(defs[0].Descriptor))
				for j, e := range defs[0].Descriptor {
					ks[j] = e.Key
				}
				keys = strings.Join(ks, ".")
				for _, d := range defs {
					detailed = detailed || d.DetailedMetric || d.ValueToMetric
				}
			}
		}
		m.descriptors.WithLabelValues(domain, keys, code).Inc()
		if detailed {
			m.detailed.WithLabelValues(domain, ratelimit.DescriptorCounterPath(r.Domain, r.Descriptors[i].Entries, nil), code).Inc()
		}
	}
}
