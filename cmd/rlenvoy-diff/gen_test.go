package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func testConfig(t *testing.T) *Config {
	t.Helper()
	cfg, err := loadConfig("testdata/config")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestSequenceIsDeterministicForASeed(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	a := &Generator{Seed: 7, Cfg: cfg, MaxRequests: 12}
	b := &Generator{Seed: 7, Cfg: cfg, MaxRequests: 12}
	// b makes the sequences in another order: each depends on the seed
	// and its number only.
	for i := 19; i >= 0; i-- {
		b.Sequence(i)
	}
	for i := range 20 {
		if got, want := b.Sequence(i), a.Sequence(i); !reflect.DeepEqual(got, want) {
			t.Fatalf("sequence %d differs between two generators of seed 7:\n%v\n%v", i, got, want)
		}
	}
	c := &Generator{Seed: 8, Cfg: cfg, MaxRequests: 12}
	same := 0
	for i := range 20 {
		if reflect.DeepEqual(c.Sequence(i), a.Sequence(i)) {
			same++
		}
	}
	if same == 20 {
		t.Fatal("seeds 7 and 8 gave the same 20 sequences")
	}
}

// The sequences cover what the comparison is for: 1 to 4 descriptors
// (and a duplicate), nested and wildcard values, both hits_addends,
// overrides (0 among them), and domains and keys that match nothing.
func TestSequencesCoverTheRequestShapes(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	g := &Generator{Seed: 1, Cfg: cfg, MaxRequests: 12}
	seen := map[string]bool{}
	for seq := range 400 {
		reqs := g.Sequence(seq)
		if len(reqs) < 2 || len(reqs) > 12 {
			t.Fatalf("sequence %d has %d requests, want 2 to 12", seq, len(reqs))
		}
		for _, r := range reqs {
			if n := len(r.Descriptors); n < 1 || n > 5 {
				t.Fatalf("request %s has %d descriptors, want 1 to 4 (5 with a duplicate)", r, n)
			}
			seen["descriptors="+string(rune('0'+min(len(r.Descriptors), 5)))] = true
			if r.HitsAddend > 1 {
				seen["request hits_addend"] = true
			}
			if r.Domain == unknownDomain {
				seen["unknown domain"] = true
			}
			keys := map[string]bool{}
			for _, d := range r.Descriptors {
				if keys[d.String()] {
					seen["duplicate"] = true
				}
				keys[d.String()] = true
				if len(d.Entries) > 1 {
					seen["nested"] = true
				}
				for _, e := range d.Entries {
					if strings.HasPrefix(e.Value, "/api/s") || strings.HasPrefix(e.Value, "/api/v1/s") {
						seen["wildcard filled"] = true
					}
					if strings.HasPrefix(e.Value, "nomatch-") {
						seen["wildcard missed"] = true
					}
				}
				if d.HitsAddend != nil && *d.HitsAddend == 0 {
					seen["descriptor hits_addend 0"] = true
				}
				if d.HitsAddend != nil && *d.HitsAddend > 1 {
					seen["descriptor hits_addend"] = true
				}
				if d.Limit != nil && d.Limit.RequestsPerUnit == 0 {
					seen["override 0"] = true
				}
				if d.Limit != nil && d.Limit.RequestsPerUnit > 0 {
					seen["override"] = true
				}
				if def, _ := cfg.match(r.Domain, d.Entries); def == nil {
					seen["no match"] = true
				}
			}
		}
	}
	for _, want := range []string{"descriptors=1", "descriptors=2", "descriptors=3", "descriptors=4", "descriptors=5",
		"request hits_addend", "unknown domain", "duplicate", "nested", "wildcard filled", "wildcard missed",
		"descriptor hits_addend 0", "descriptor hits_addend", "override 0", "override", "no match"} {
		if !seen[want] {
			t.Errorf("400 sequences of seed 1 have no request with %s", want)
		}
	}
}

// match follows Envoy's service: the exact entry, else the first wildcard
// of the files, else the key alone; the node of the last entry.
func TestMatchIsEnvoysServices(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	e := func(kv ...string) []ratelimit.DescriptorEntry {
		var out []ratelimit.DescriptorEntry
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, ratelimit.DescriptorEntry{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		domain  string
		entries []ratelimit.DescriptorEntry
		want    string // the definition's name, "" for none
		counter string // the counter's entries
	}{
		{"edge", e("route", "checkout", "user", "vip"), "edge/route=checkout/user=vip", "route=checkout,user=vip"},
		{"edge", e("route", "checkout", "user", "ann"), "edge/route=checkout/user", "route=checkout,user=ann"},
		{"edge", e("route", "checkout"), "", ""},                                   // shallower: no limit there
		{"edge", e("route", "checkout", "user", "ann", "x", "y"), "", ""},          // deeper
		{"edge", e("path", "/api/v1/x"), "edge/path=%2Fapi%2F*", "path=/api/v1/x"}, // the first wildcard of the file
		{"edge", e("tenant", "free"), "edge/tenant=free", "tenant=free"},
		{"edge", e("nothing", "x"), "", ""},
		{"nodomain", e("tenant", "x"), "", ""},
		{"other", e("files", "files/a"), "other/files=files%2F*", "files=files/*"}, // share_threshold: one counter
	} {
		def, counter := cfg.match(tc.domain, tc.entries)
		got := ""
		if def != nil {
			got = def.Name
		}
		in := Descriptor{Entries: counter}.String()
		if got != tc.want || in != tc.counter {
			t.Errorf("match(%s, %v) = %q counting in %q, want %q counting in %q", tc.domain, tc.entries, got, in, tc.want, tc.counter)
		}
	}
}
