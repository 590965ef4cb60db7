package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func ok(rpu uint32, unit string, remaining uint32, reset time.Duration) Status {
	return Status{Code: "OK", HasLimit: true, RequestsPerUnit: rpu, Unit: unit, Remaining: remaining, Reset: reset}
}

func over(rpu uint32, unit string, remaining uint32, reset time.Duration) Status {
	s := ok(rpu, unit, remaining, reset)
	s.Code = "OVER_LIMIT"
	return s
}

func oneDescriptor(entries ...ratelimit.DescriptorEntry) Request {
	return Request{Seq: 3, Index: 1, Domain: "edge", Descriptors: []Descriptor{{Entries: entries}}}
}

func kindsOf(diffs []Difference) []string {
	var out []string
	for _, d := range diffs {
		out = append(out, d.Kind)
	}
	return out
}

func TestCompare(t *testing.T) {
	t.Parallel()
	req := oneDescriptor(ratelimit.DescriptorEntry{Key: "tenant", Value: "a"})
	answer := func(code string, st ...Status) Answer { return Answer{Code: code, Statuses: st} }
	for _, tc := range []struct {
		name        string
		envoy, ours Answer
		want        []string
	}{
		{"the same", answer("OK", ok(3, "HOUR", 2, 10*time.Second)), answer("OK", ok(3, "HOUR", 2, 10*time.Second)), nil},
		{"reset 2s apart is within the tolerance", answer("OK", ok(3, "HOUR", 2, 10*time.Second)), answer("OK", ok(3, "HOUR", 2, 8*time.Second)), nil},
		{"reset 3s apart is not", answer("OK", ok(3, "HOUR", 2, 10*time.Second)), answer("OK", ok(3, "HOUR", 2, 13*time.Second)), []string{kindReset}},
		{"remaining", answer("OK", ok(3, "HOUR", 2, time.Second)), answer("OK", ok(3, "HOUR", 1, time.Second)), []string{kindRemaining}},
		{"code and overall code", answer("OVER_LIMIT", over(3, "HOUR", 0, time.Second)), answer("OK", ok(3, "HOUR", 0, time.Second)), []string{kindOverall, kindCode}},
		{"requests_per_unit", answer("OK", ok(3, "HOUR", 2, time.Second)), answer("OK", ok(4, "HOUR", 2, time.Second)), []string{kindLimit}},
		{"unit", answer("OK", ok(3, "HOUR", 2, time.Second)), answer("OK", ok(3, "MINUTE", 2, time.Second)), []string{kindLimit}},
		{"a limit on one side only, its reset not compared", answer("OK", ok(3, "HOUR", 2, time.Hour)), answer("OK", Status{Code: "OK", Remaining: 2}), []string{kindLimit}},
		{"statuses", answer("OK", ok(3, "HOUR", 2, time.Second)), answer("OK"), []string{kindStatuses}},
		{"refused by one", answer("OK", ok(3, "HOUR", 2, time.Second)), Answer{Err: "InvalidArgument: descriptors[0]"}, []string{kindError}},
		{"refused alike by both", Answer{Err: "Unknown: rate limit domain must not be empty"}, Answer{Err: "Unknown: domain: must not be empty"}, nil},
		{"refused with other codes", Answer{Err: "Unknown: x"}, Answer{Err: "InvalidArgument: x"}, []string{kindError}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			diffs := compare(req, tc.envoy, tc.ours, 2*time.Second)
			if got := kindsOf(diffs); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("differences %v, want %v", got, tc.want)
			}
			for _, d := range diffs {
				if d.Seq != 3 || d.Index != 1 {
					t.Errorf("difference %+v is not of request 3.1", d)
				}
			}
		})
	}
}

func TestAllowlist(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	zero, one := uint32(0), uint32(1)
	tenant := ratelimit.DescriptorEntry{Key: "tenant", Value: "a"}
	withHits := func(h *uint32, entries ...ratelimit.DescriptorEntry) Request {
		r := oneDescriptor(entries...)
		r.Descriptors[0].HitsAddend = h
		return r
	}
	for _, tc := range []struct {
		name        string
		req         Request
		envoy, ours Answer
		want        string // the allowance's name for every difference, "" when none may be allowed
	}{
		{"hits_addend 0 at the limit", withHits(&zero, tenant),
			Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 0, time.Second)}}, Answer{Code: "OVER_LIMIT", Statuses: []Status{over(3, "HOUR", 0, time.Second)}},
			"hits_addend 0 checks for room for one hit"},
		{"hits_addend 1 at the limit is no documented difference", withHits(&one, tenant),
			Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 0, time.Second)}}, Answer{Code: "OVER_LIMIT", Statuses: []Status{over(3, "HOUR", 0, time.Second)}},
			""},
		{"hits_addend 0 with room left is none either", withHits(&zero, tenant),
			Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 1, time.Second)}}, Answer{Code: "OVER_LIMIT", Statuses: []Status{over(3, "HOUR", 0, time.Second)}},
			""},
		{"overlapping wildcards", oneDescriptor(ratelimit.DescriptorEntry{Key: "path", Value: "/api/v1/x"}),
			Answer{Code: "OK", Statuses: []Status{ok(10, "SECOND", 9, time.Second)}}, Answer{Code: "OK", Statuses: []Status{ok(20, "SECOND", 19, time.Second)}},
			"overlapping wildcards, most literal first"},
		{"one wildcard only", oneDescriptor(ratelimit.DescriptorEntry{Key: "path", Value: "/api/v2/x"}),
			Answer{Code: "OK", Statuses: []Status{ok(10, "SECOND", 9, time.Second)}}, Answer{Code: "OK", Statuses: []Status{ok(20, "SECOND", 19, time.Second)}},
			""},
		{"two users refused", oneDescriptor(tenant),
			Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 2, time.Second)}},
			Answer{Err: `InvalidArgument: descriptors[1].entries[0]: user "b" differs from "a" given by an earlier entry; a request has one of each identity`},
			"two values of one identity refused"},
		{"another refusal", oneDescriptor(tenant),
			Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 2, time.Second)}},
			Answer{Err: "InvalidArgument: descriptors[0].limit.requests_per_unit: must be at least 1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			diffs := compare(tc.req, tc.envoy, tc.ours, 2*time.Second)
			if len(diffs) == 0 {
				t.Fatal("no differences to allow")
			}
			allow(cfg, tc.req, tc.envoy, tc.ours, diffs)
			for _, d := range diffs {
				got := ""
				if d.Allowed != nil {
					got = d.Allowed.Name
				}
				if got != tc.want {
					t.Errorf("%s difference allowed by %q, want %q", d.Kind, got, tc.want)
				}
			}
		})
	}
}

// The request's overall code is allowed only when every descriptor code
// difference of the request is.
func TestAllowOverallCodeNeedsEveryCodeAllowed(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	zero := uint32(0)
	req := Request{Domain: "edge", Descriptors: []Descriptor{
		{Entries: []ratelimit.DescriptorEntry{{Key: "tenant", Value: "a"}}, HitsAddend: &zero},
		{Entries: []ratelimit.DescriptorEntry{{Key: "tenant", Value: "b"}}},
	}}
	envoy := Answer{Code: "OK", Statuses: []Status{ok(3, "HOUR", 0, time.Second), ok(3, "HOUR", 0, time.Second)}}
	for _, tc := range []struct {
		name    string
		second  Status
		allowed bool
	}{
		{"the other descriptor agrees", ok(3, "HOUR", 0, time.Second), true},
		{"the other descriptor differs", over(3, "HOUR", 0, time.Second), false},
	} {
		ours := Answer{Code: "OVER_LIMIT", Statuses: []Status{over(3, "HOUR", 0, time.Second), tc.second}}
		diffs := compare(req, envoy, ours, 2*time.Second)
		allow(cfg, req, envoy, ours, diffs)
		for _, d := range diffs {
			if d.Kind == kindOverall && (d.Allowed != nil) != tc.allowed {
				t.Errorf("%s: overall code allowed %v, want %v", tc.name, d.Allowed != nil, tc.allowed)
			}
		}
	}
}

// Every allowlist entry names a passage of docs/envoy.md that documents
// the difference: the heading, and the words that start the passage
// under it.
func TestAllowlistNamesDocumentedSections(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/envoy.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, a := range allowlist {
		heading, passage, ok := strings.Cut(a.Section, " / ")
		if !ok {
			t.Errorf("allowlist entry %q: section %q is not \"heading / passage\"", a.Name, a.Section)
			continue
		}
		loc := regexp.MustCompile(`(?m)^#+ ` + regexp.QuoteMeta(heading) + `$`).FindStringIndex(text)
		if loc == nil {
			t.Errorf("allowlist entry %q: docs/envoy.md has no heading %q", a.Name, heading)
			continue
		}
		under := text[loc[1]:]
		if next := regexp.MustCompile(`(?m)^#+ `).FindStringIndex(under); next != nil {
			under = under[:next[0]]
		}
		if !strings.Contains(strings.Join(strings.Fields(under), " "), passage) {
			t.Errorf("allowlist entry %q: docs/envoy.md, %q, has no passage starting %q", a.Name, heading, passage)
		}
	}
}
