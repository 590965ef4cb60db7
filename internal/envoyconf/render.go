package envoyconf

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The format's shapes, for writing (field order as the README shows it).
type yamlRoot struct {
	Domain      string            `yaml:"domain"`
	Descriptors []*yamlDescriptor `yaml:"descriptors,omitempty"`
}

type yamlDescriptor struct {
	Key            string            `yaml:"key"`
	Value          string            `yaml:"value,omitempty"`
	RateLimit      *yamlRateLimit    `yaml:"rate_limit,omitempty"`
	ShadowMode     bool              `yaml:"shadow_mode,omitempty"`
	DetailedMetric bool              `yaml:"detailed_metric,omitempty"`
	ValueToMetric  bool              `yaml:"value_to_metric,omitempty"`
	ShareThreshold bool              `yaml:"share_threshold,omitempty"`
	Descriptors    []*yamlDescriptor `yaml:"descriptors,omitempty"`
}

type yamlRateLimit struct {
	Name            string         `yaml:"name,omitempty"`
	Replaces        []yamlReplaces `yaml:"replaces,omitempty"`
	Unit            string         `yaml:"unit,omitempty"`
	RequestsPerUnit *int           `yaml:"requests_per_unit,omitempty"`
	Unlimited       bool           `yaml:"unlimited,omitempty"`
}

type yamlReplaces struct {
	Name string `yaml:"name"`
}

// Render writes the descriptor definitions of defs (others are ignored)
// in Envoy's format: one YAML document per domain, in domain order,
// separated by "---" (Envoy's service reads one domain per file: see
// domains). A definition the format cannot hold (disabled, a window that
// is not a second, minute, hour or day, another algorithm than
// fixed_window, a fail policy of its own, or a second definition at the same
// descriptor) is left out and named in skipped.
func Render(defs []ratelimit.Definition) (out []byte, domains []string, skipped []string) {
	trees := map[string]*yamlRoot{}
	at := map[string]string{} // descriptor name -> definition id written there
	for _, d := range defs {
		if d.EntityType != ratelimit.EntityDescriptor {
			continue
		}
		domain, entries, err := ratelimit.ParseDescriptorName("name", d.Name)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %s", d.Key(), err.Message))
			continue
		}
		unit := ratelimit.DescriptorUnit(d.WindowSeconds)
		switch {
		case !d.Enabled:
			skipped = append(skipped, d.Key()+": disabled (Envoy's format has no disabled limits)")
			continue
		case !d.Unlimited && unit == "":
			skipped = append(skipped, fmt.Sprintf("%s: window %ds is not a second, minute, hour or day", d.Key(), d.WindowSeconds))
			continue
		case d.AlgorithmOrDefault() != ratelimit.AlgorithmFixedWindow:
			skipped = append(skipped, fmt.Sprintf("%s: algorithm %s (Envoy's service counts fixed windows only)", d.Key(), d.Algorithm))
			continue
		case d.FailPolicyOf() != "":
			skipped = append(skipped, fmt.Sprintf("%s: fail_policy %s (Envoy's format has no per-limit failure mode)", d.Key(), d.FailPolicyOf()))
			continue
		}
		if prev, dup := at[d.Name]; dup {
			skipped = append(skipped, fmt.Sprintf("%s: %s is already written at the same descriptor (Envoy's format holds one limit per descriptor)", d.Key(), prev))
			continue
		}
		at[d.Name] = d.Key()
		root := trees[domain]
		if root == nil {
			root = &yamlRoot{Domain: domain}
			trees[domain] = root
		}
		list := &root.Descriptors
		var node *yamlDescriptor
		for _, e := range entries {
			node = nil
			for _, c := range *list {
				if c.Key == e.Key && c.Value == e.Value {
					node = c
				}
			}
			if node == nil {
				node = &yamlDescriptor{Key: e.Key, Value: e.Value}
				*list = append(*list, node)
			}
			list = &node.Descriptors
		}
		rl := &yamlRateLimit{Name: d.LimitName}
		for _, r := range d.Replaces {
			rl.Replaces = append(rl.Replaces, yamlReplaces{Name: r})
		}
		if d.Unlimited {
			rl.Unlimited = true
		} else {
			rl.Unit, rl.RequestsPerUnit = unit, d.MaxRequests
		}
		node.RateLimit = rl
		node.ShadowMode = d.Mode == ratelimit.ModeShadow
		node.DetailedMetric, node.ValueToMetric = d.DetailedMetric, d.ValueToMetric
		if d.ShareThreshold {
			// On the wildcard entries of its path, where Envoy reads it.
			list := &root.Descriptors
			for _, e := range entries {
				for _, c := range *list {
					if c.Key == e.Key && c.Value == e.Value {
						if strings.Contains(e.Value, "*") {
							c.ShareThreshold = true
						}
						list = &c.Descriptors
					}
				}
			}
		}
	}
	domains = make([]string, 0, len(trees))
	for d, root := range trees {
		domains = append(domains, d)
		literalOrder(root.Descriptors)
	}
	slices.Sort(domains)
	var b bytes.Buffer
	for i, d := range domains {
		if i > 0 {
			b.WriteString("---\n")
		}
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(trees[d]); err != nil {
			skipped = append(skipped, fmt.Sprintf("domain %s: %v", d, err))
		}
		_ = enc.Close()
	}
	return b.Bytes(), domains, skipped
}

// literalOrder puts the wildcard entries of each list, in the places
// wildcards hold, in the order rlctl tries them (most literal first):
// Envoy's service tries them in the order written, so it reads the
// export as rlctl matches it.
func literalOrder(list []*yamlDescriptor) {
	var at []int
	var wild []*yamlDescriptor
	for i, d := range list {
		if strings.Contains(d.Value, "*") {
			at = append(at, i)
			wild = append(wild, d)
		}
		literalOrder(d.Descriptors)
	}
	slices.SortStableFunc(wild, func(a, b *yamlDescriptor) int {
		x, y := wildcard(a.Key, a.Value, place{}), wildcard(b.Key, b.Value, place{})
		switch {
		case literalFirst(x, y):
			return -1
		case literalFirst(y, x):
			return 1
		}
		return 0
	})
	for k, i := range at {
		list[i] = wild[k]
	}
}
