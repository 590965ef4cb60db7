package dash

import (
	"io"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The Limits view with Envoy descriptor definitions: the table
// names each by its domain and entries, and the detail pane shows domain,
// entries, rate, algorithm, unlimited, limit name, replaces, shadow mode
// and share_threshold. The scenes join TestGolden's, TestColorFits' and
// TestNarrowAndTiny's (kept in this file so that scenes added elsewhere
// merge without a conflict).
func init() {
	scenes = append(scenes,
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"limits_descriptors", func(t *testing.T, w, h int) Model { return loadedDescriptors(t, w, h) }},
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"limits_descriptors_detail", func(t *testing.T, w, h int) Model {
			return apply(t, loadedDescriptors(t, w, h), steps(typed("jjj<enter>"), answer(resDetail, func(r reply) tea.Msg {
				return detailMsg{reply: r, id: descriptorDefinitions()[3].ID, countersOK: true}
			})))
		}},
		struct {
			name  string
			build func(t *testing.T, w, h int) Model
		}{"limits_descriptors_wildcard_detail", func(t *testing.T, w, h int) Model {
			return apply(t, loadedDescriptors(t, w, h), steps(typed("j<enter>"), answer(resDetail, func(r reply) tea.Msg {
				return detailMsg{reply: r, id: descriptorDefinitions()[1].ID, countersOK: true}
			})))
		}},
	)
}

// descriptorDefinitions are, in id order (the table's), docs/envoy.md's
// example (a token bucket per user on the checkout route), a shared
// wildcard over a value that holds a '/', an unlimited leaf, and a
// per-minute limit that replaces others by name in shadow mode, as the
// server returns them (domain and descriptor filled in, the name
// canonical).
func descriptorDefinitions() []ratelimit.Definition {
	desc := func(domain string, entries ...ratelimit.DescriptorEntry) ratelimit.DescriptorFields {
		return ratelimit.DescriptorFields{Domain: domain, Descriptor: entries}
	}
	e := func(k, v string) ratelimit.DescriptorEntry { return ratelimit.DescriptorEntry{Key: k, Value: v} }
	defs := []ratelimit.Definition{
		{Axis: "target", EntityType: "descriptor", WindowSeconds: 60, MaxRequests: ptr(20), Algorithm: ratelimit.AlgorithmTokenBucket,
			DescriptorFields: desc("edge", e("route", "checkout"), e("user", "")), Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "target", EntityType: "descriptor", WindowSeconds: 3600, MaxRequests: ptr(100), Algorithm: ratelimit.AlgorithmSlidingWindow,
			DescriptorFields: func() ratelimit.DescriptorFields {
				f := desc("files", e("path", "files/*"), e("user", ""))
				f.ShareThreshold, f.DetailedMetric = true, true
				return f
			}(), Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "target", EntityType: "descriptor", WindowSeconds: 1,
			DescriptorFields: func() ratelimit.DescriptorFields {
				f := desc("mongo_cps", e("database", "internal"))
				f.Unlimited = true
				return f
			}(), Enabled: true, Mode: "enforce", Version: 1},
		{Axis: "target", EntityType: "descriptor", WindowSeconds: 60, MaxRequests: ptr(5), Mode: "shadow", Enabled: true, Version: 3,
			Description: "per remote address, replaces the generic per-key limit",
			DescriptorFields: func() ratelimit.DescriptorFields {
				f := desc("mongo_cps", e("database", "users"), e("remote_address", ""))
				f.LimitName, f.Replaces = "users-per-address", []string{"per-address", "per-db"}
				return f
			}()},
	}
	for i := range defs {
		defs[i].Name = ratelimit.DescriptorName(defs[i].Domain, defs[i].Descriptor)
		defs[i].ID = defs[i].Key()
	}
	return defs
}

func loadedDescriptors(t *testing.T, w, h int) Model {
	t.Helper()
	m := loaded(t, w, h)
	m.limits.SetDefinitions(descriptorDefinitions())
	return m
}

// The detail pane's descriptor lines: every Envoy field by name, each
// entry as key=value with what a key alone and a wildcard match, and the
// same from the canonical name alone (a percent-encoded value read back).
func TestDescriptorLines(t *testing.T) {
	t.Parallel()
	st := NewStyles(io.Discard, false)
	defs := descriptorDefinitions()
	nameOnly := defs[1]
	nameOnly.Domain, nameOnly.Descriptor = "", nil
	for _, c := range []struct {
		name string
		d    ratelimit.Definition
		want string
	}{
		{"token bucket per user", defs[0], "domain edge  rate 20 per minute  unlimited no\n" +
			"limit name -  replaces -\nshadow mode no  share threshold no  detailed metric no\n" +
			"entries (2):\n  route=checkout  user (every value, each its own)"},
		{"replaces in shadow mode", defs[3], "domain mongo_cps  rate 5 per minute  unlimited no\n" +
			"limit name users-per-address  replaces per-address, per-db\nshadow mode yes  share threshold no  detailed metric no\n" +
			"entries (2):\n  database=users  remote_address (every value, each its own)"},
		{"unlimited", defs[2], "domain mongo_cps  rate unlimited  unlimited yes\n" +
			"limit name -  replaces -\nshadow mode no  share threshold no  detailed metric no\n" +
			"entries (1):\n  database=internal"},
		{"shared wildcard from the name alone", nameOnly, "domain files  rate 100 per hour  unlimited no\n" +
			"limit name -  replaces -\nshadow mode no  share threshold yes  detailed metric yes\n" +
			"entries (2):\n  path=files/* (wildcard, shared)  user (every value, each its own)"},
		{"not a descriptor", ratelimit.Definition{EntityType: "mcp_server", Name: "edge/route"}, ""},
	} {
		if got := strings.Join(descriptorLines(&st, c.d, 120), "\n"); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
	if got := strings.Join(matchLines(&st, defs[2], 120), "\n"); !strings.HasPrefix(got, "domain mongo_cps") {
		t.Errorf("matchLines of a descriptor: %q", got)
	}
}

// The NAME cell reads the domain and entries as written, not the
// percent-encoded canonical name; other definitions keep their name.
func TestDefinitionName(t *testing.T) {
	t.Parallel()
	defs := descriptorDefinitions()
	if defs[1].Name != "files/path=files%2F*/user" {
		t.Fatalf("fixture name %q", defs[1].Name)
	}
	nameOnly := defs[1]
	nameOnly.Domain, nameOnly.Descriptor = "", nil
	for _, c := range []struct {
		d    ratelimit.Definition
		want string
	}{
		{defs[0], "edge: route=checkout, user"},
		{defs[1], "files: path=files/*, user"},
		{nameOnly, "files: path=files/*, user"},
		{ratelimit.Definition{EntityType: "descriptor", Name: "bad%zz"}, "bad%zz"},
		{ratelimit.Definition{EntityType: "mcp_server", Name: "github-mcp"}, "github-mcp"},
	} {
		if got := definitionName(c.d); got != c.want {
			t.Errorf("%q: %q, want %q", c.d.Name, got, c.want)
		}
	}
}
