package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Answer is one service's answer to a Request, reduced to what is
// compared.
type Answer struct {
	// Err is the gRPC error ("InvalidArgument: ..."); empty when answered.
	Err      string
	Code     string // overall_code
	Statuses []Status
}

// Status is one descriptor's status in an Answer.
type Status struct {
	Code            string
	HasLimit        bool // current_limit is set
	RequestsPerUnit uint32
	Unit            string
	Remaining       uint32
	Reset           time.Duration // duration_until_reset (0 when unset)
}

func (s Status) String() string {
	if !s.HasLimit {
		return fmt.Sprintf("%s no limit, remaining %d", s.Code, s.Remaining)
	}
	return fmt.Sprintf("%s %d/%s, remaining %d, reset %s", s.Code, s.RequestsPerUnit, s.Unit, s.Remaining, s.Reset)
}

// Kinds of difference: of a request, then of one descriptor.
const (
	kindError     = "error"        // one service answered, the other refused (or both refused differently)
	kindOverall   = "overall_code" // the request's overall code
	kindStatuses  = "statuses"     // a different number of statuses
	kindCode      = "code"
	kindLimit     = "current_limit" // set on one side only, or another requests_per_unit or unit
	kindRemaining = "limit_remaining"
	kindReset     = "duration_until_reset" // more than the tolerance apart
)

// kinds in the order the summary prints them.
var kinds = []string{kindError, kindOverall, kindStatuses, kindCode, kindLimit, kindRemaining, kindReset}

// Difference is one thing the two answers to a request disagree on.
type Difference struct {
	Seq, Index int
	// Descriptor is the descriptor's index, -1 for the request's own
	// fields (error, overall_code, statuses).
	Descriptor  int
	Kind        string
	Envoy, Ours string
	// Allowed is the allowlist entry that documents it (nil: none).
	Allowed *Allowance
	// Cause is the likely cause of a difference no entry allows
	// (classify).
	Cause string
}

// compare lists what two answers to req disagree on: the request's error
// and overall code, then per descriptor its code, current_limit
// (requests_per_unit and unit), limit_remaining, and duration_until_reset
// when both have a limit and they are more than tol apart.
func compare(req Request, envoy, ours Answer, tol time.Duration) []Difference {
	d := func(i int, kind, e, o string) Difference {
		return Difference{Seq: req.Seq, Index: req.Index, Descriptor: i, Kind: kind, Envoy: e, Ours: o}
	}
	if envoy.Err != "" || ours.Err != "" {
		if errCode(envoy.Err) == errCode(ours.Err) {
			return nil // both refused it alike; the messages are their own
		}
		return []Difference{d(-1, kindError, orOK(envoy.Err), orOK(ours.Err))}
	}
	var out []Difference
	if envoy.Code != ours.Code {
		out = append(out, d(-1, kindOverall, envoy.Code, ours.Code))
	}
	if len(envoy.Statuses) != len(ours.Statuses) {
		return append(out, d(-1, kindStatuses, fmt.Sprint(len(envoy.Statuses)), fmt.Sprint(len(ours.Statuses))))
	}
	for i, e := range envoy.Statuses {
		o := ours.Statuses[i]
		if e.Code != o.Code {
			out = append(out, d(i, kindCode, e.Code, o.Code))
		}
		if e.HasLimit != o.HasLimit || e.RequestsPerUnit != o.RequestsPerUnit || e.Unit != o.Unit {
			out = append(out, d(i, kindLimit, limitString(e), limitString(o)))
		}
		if e.Remaining != o.Remaining {
			out = append(out, d(i, kindRemaining, fmt.Sprint(e.Remaining), fmt.Sprint(o.Remaining)))
		}
		if e.HasLimit && o.HasLimit && (e.Reset-o.Reset > tol || o.Reset-e.Reset > tol) {
			out = append(out, d(i, kindReset, e.Reset.String(), o.Reset.String()))
		}
	}
	return out
}

func limitString(s Status) string {
	if !s.HasLimit {
		return "none"
	}
	return fmt.Sprintf("%d/%s", s.RequestsPerUnit, s.Unit)
}

// errCode is the gRPC code of an Answer.Err ("" when answered).
func errCode(err string) string {
	code, _, _ := strings.Cut(err, ":")
	return code
}

func orOK(err string) string {
	if err == "" {
		return "answered"
	}
	return err
}

// Allowance is an allowlist entry: a difference rlctl means to have,
// documented in docs/envoy.md.
type Allowance struct {
	Name string
	// Section is the docs/envoy.md heading that documents it, then, after
	// " / ", the words that start the passage under it.
	Section string
	// Match reports whether it explains difference d of the answers to
	// req.
	Match func(cfg *Config, req Request, d Difference, envoy, ours Answer) bool `json:"-"`
	// Refusal: rlapi refuses the request, so that the two services count
	// differently from then on; the rest of the sequence is not compared.
	Refusal bool
}

// allowlist is every difference rlctl documents; everything else fails
// the run.
var allowlist = []*Allowance{
	{
		Name:    "hits_addend 0 checks for room for one hit",
		Section: "Differences from Envoy's service / **`hits_addend` 0 on a descriptor**",
		// Envoy's service answers OK while the counter has not gone past
		// the limit (count == limit included); rlapi answers OVER_LIMIT
		// when one more hit does not fit, remaining 0 either way.
		Match: func(_ *Config, req Request, d Difference, envoy, ours Answer) bool {
			if d.Kind != kindCode {
				return false
			}
			h := req.Descriptors[d.Descriptor].HitsAddend
			e, o := envoy.Statuses[d.Descriptor], ours.Statuses[d.Descriptor]
			return h != nil && *h == 0 && e.Code == "OK" && o.Code == "OVER_LIMIT" && e.Remaining == 0 && o.Remaining == 0
		},
	},
	{
		Name:    "overlapping wildcards, most literal first",
		Section: "Matching / Which wildcard is first differs",
		// A value two wildcards of one key match takes the most literal
		// one's limit here, the first one's of the files in Envoy's
		// service.
		Match: func(cfg *Config, req Request, d Difference, _, _ Answer) bool {
			return d.Descriptor >= 0 && overlappingWildcards(cfg, req.Domain, req.Descriptors[d.Descriptor].Entries)
		},
	},
	{
		Name:    "a leaf without rate_limit answers as unlimited",
		Section: "Differences from Envoy's service / **A leaf without `rate_limit`**",
		// The import makes it unlimited: true, which answers remaining
		// 4294967295 where Envoy's service answers such a leaf 0 (both OK,
		// no limit).
		Match: func(cfg *Config, req Request, d Difference, envoy, ours Answer) bool {
			if d.Kind != kindRemaining || d.Descriptor < 0 {
				return false
			}
			e, o := envoy.Statuses[d.Descriptor], ours.Statuses[d.Descriptor]
			return e.Code == "OK" && o.Code == "OK" && !e.HasLimit && !o.HasLimit && e.Remaining == 0 && o.Remaining == math.MaxUint32
		},
	},
	{
		Name:    "two values of one identity refused",
		Section: "Our identities for Envoy traffic / Two entries naming different values of one identity are `InvalidArgument`",
		// Entries with the identity keys (user, client_id, ...) name the
		// call's identities; Envoy's own configurations use the key user
		// as a plain descriptor key.
		Match: func(_ *Config, _ Request, d Difference, envoy, ours Answer) bool {
			return d.Kind == kindError && envoy.Err == "" && errCode(ours.Err) == "InvalidArgument" &&
				strings.Contains(ours.Err, "a request has one of each identity")
		},
		Refusal: true,
	},
}

// allow sets Allowed on the differences of one request an allowlist entry
// documents. A request's overall code is allowed when every descriptor
// code difference of the request is.
func allow(cfg *Config, req Request, envoy, ours Answer, diffs []Difference) {
	var codes, allowedCodes []*Allowance
	for j := range diffs {
		df := &diffs[j]
		if df.Kind == kindOverall {
			continue
		}
		for _, a := range allowlist {
			if a.Match(cfg, req, *df, envoy, ours) {
				df.Allowed = a
				break
			}
		}
		if df.Kind == kindCode {
			codes = append(codes, df.Allowed)
			if df.Allowed != nil {
				allowedCodes = append(allowedCodes, df.Allowed)
			}
		}
	}
	for j := range diffs {
		if diffs[j].Kind == kindOverall && len(codes) > 0 && len(codes) == len(allowedCodes) {
			diffs[j].Allowed = allowedCodes[0]
		}
	}
}

// overlappingWildcards reports whether an entry of a descriptor matches
// two wildcard values of its key at one node of the domain's tree: where
// rlctl (most literal first) and Envoy's service (first in the files) may
// take different limits.
func overlappingWildcards(cfg *Config, domain string, entries []ratelimit.DescriptorEntry) bool {
	for j, e := range entries {
		patterns := map[string]bool{}
		for _, def := range cfg.Defs[domain] {
			p := def.Descriptor
			if len(p) <= j || p[j].Key != e.Key || !strings.Contains(p[j].Value, "*") || !slices.Equal(p[:j], entries[:j]) {
				continue
			}
			if ratelimit.GlobMatch(p[j].Value, e.Value) {
				patterns[p[j].Value] = true
			}
		}
		if len(patterns) > 1 {
			return true
		}
	}
	return false
}
