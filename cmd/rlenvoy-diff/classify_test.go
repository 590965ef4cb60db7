package main

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The likely cause comes from the request and what came before it in its
// sequence; a new sequence forgets the old one's counters.
func TestClassify(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	tenant := []ratelimit.DescriptorEntry{{Key: "tenant", Value: "a"}}
	d := func(entries []ratelimit.DescriptorEntry) Descriptor { return Descriptor{Entries: entries} }
	remainingDiff := func(req Request) []Difference {
		return []Difference{{Seq: req.Seq, Index: req.Index, Descriptor: 0, Kind: kindRemaining}}
	}
	okAnswer := Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 1, time.Second)}}
	overAnswer := Answer{Code: "OVER_LIMIT", Statuses: []Status{over(3, "HOUR", 0, time.Second)}}

	c := newClassifier(cfg)
	steps := []struct {
		name  string
		req   Request
		envoy Answer
		diffs []Difference
		want  string
	}{
		{name: "first, no history", req: Request{Seq: 1, Index: 0, Domain: "edge", Descriptors: []Descriptor{d(tenant)}}, envoy: okAnswer, want: causeOther},
		{name: "Envoy over the limit, nothing differs", req: Request{Seq: 1, Index: 1, Domain: "edge", Descriptors: []Descriptor{d(tenant)}}, envoy: overAnswer},
		{name: "after Envoy's OVER_LIMIT", req: Request{Seq: 1, Index: 2, Domain: "edge", Descriptors: []Descriptor{d(tenant)}}, envoy: okAnswer, want: causePastLimit},
		{name: "a new sequence", req: Request{Seq: 2, Index: 0, Domain: "edge", Descriptors: []Descriptor{d(tenant)}}, envoy: okAnswer, want: causeOther},
		{name: "duplicates", req: Request{Seq: 3, Index: 0, Domain: "edge", Descriptors: []Descriptor{d(tenant), d(tenant)}},
			envoy: Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 2, time.Second), ok(3, "HOUR", 1, time.Second)}}, want: causeDuplicate},
		{name: "replaced by another descriptor's limit", req: Request{Seq: 4, Index: 0, Domain: "edge",
			Descriptors: []Descriptor{d(tenant), d([]ratelimit.DescriptorEntry{{Key: "plan", Value: "gold"}})}},
			envoy: Answer{Code: "OK", Statuses: []Status{{Code: "OK"}, ok(100, "HOUR", 99, time.Second)}}, want: causeReplaces},
		{name: "shadow mode", req: Request{Seq: 5, Index: 0, Domain: "edge", Descriptors: []Descriptor{d([]ratelimit.DescriptorEntry{{Key: "probe", Value: "x"}})}},
			envoy: okAnswer, want: causeShadow},
		{name: "an override of the configured unit", req: Request{Seq: 6, Index: 0, Domain: "edge",
			Descriptors: []Descriptor{{Entries: tenant, Limit: &Override{RequestsPerUnit: 1, Unit: "HOUR"}}}}, envoy: okAnswer},
		{name: "then the configured limit, in the same counter", req: Request{Seq: 6, Index: 1, Domain: "edge", Descriptors: []Descriptor{d(tenant)}},
			envoy: okAnswer, want: causeOverrideShare},
		{name: "a whitelisted leaf", req: Request{Seq: 7, Index: 0, Domain: "edge", Descriptors: []Descriptor{d([]ratelimit.DescriptorEntry{{Key: "tenant", Value: "free"}})}},
			envoy: Answer{Code: "OK", Statuses: []Status{{Code: "OK"}}}, want: causeUnlimited},
		{name: "remaining on OVER_LIMIT", req: Request{Seq: 8, Index: 0, Domain: "edge", Descriptors: []Descriptor{d(tenant)}}, envoy: overAnswer, want: causeOverRemaining},
	}
	for _, s := range steps {
		diffs := s.diffs
		if s.want != "" {
			diffs = remainingDiff(s.req)
		}
		c.classify(s.req, s.envoy, diffs)
		if s.want != "" && diffs[0].Cause != s.want {
			t.Errorf("%s: cause %q, want %q", s.name, diffs[0].Cause, s.want)
		}
	}
}
