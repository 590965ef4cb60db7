package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Likely causes of the differences no allowlist entry documents, from
// what the request asked and what came before it in its sequence, most
// specific first. They are a reading aid for whoever fixes them, not a
// verdict: the run fails on every one of them alike.
const (
	causeRefused       = "refused by one service only"
	causeOverrideZero  = "limit override of 0"
	causeReplaces      = "replaces across descriptors"
	causeShadow        = "shadow mode"
	causeDuplicate     = "duplicate descriptors"
	causeOverrideShare = "override and configured limit in one counter"
	causeUnlimited     = "unlimited descriptor"
	causeOverRemaining = "limit_remaining on OVER_LIMIT"
	causePastLimit     = "counting past the limit"
	causeFollows       = "follows an earlier difference on the counter"
	causeHitsZero      = "descriptor hits_addend 0"
	causeOther         = "other"
)

// causes in the order the summary prints them.
var causes = []string{causeRefused, causeOverrideZero, causeReplaces, causeShadow, causeDuplicate, causeOverrideShare, causeUnlimited,
	causeOverRemaining, causePastLimit, causeFollows, causeHitsZero, causeOther}

// classifier remembers, within one sequence, which counters Envoy's
// service answered OVER_LIMIT on (it counts on past a limit; rlapi does
// not), which already differed, and which limits (configured, overrides)
// counted in each.
type classifier struct {
	cfg       *Config
	seq       int
	envoyOver map[string]bool
	differed  map[string]bool
	sources   map[string]map[string]bool
}

func newClassifier(cfg *Config) *classifier { return &classifier{cfg: cfg, seq: -1} }

// counter names the counter Envoy's service counts descriptor i of req in
// (its entries, a shared wildcard's pattern for its value, and the unit:
// a limit override of the configured limit's unit counts in the same
// counter), and the limit that counts there: "config" or the override.
// Both are empty for a descriptor without a limit.
func (c *classifier) counter(req Request, i int) (key, source string) {
	d := req.Descriptors[i]
	def, entries := c.cfg.match(req.Domain, d.Entries)
	var unit string
	switch {
	case c.cfg.trees[req.Domain] == nil:
		return "", "" // an unknown domain: no limit, not even an override
	case d.Limit != nil:
		unit, source = d.Limit.Unit, fmt.Sprintf("override %d/%s", d.Limit.RequestsPerUnit, d.Limit.Unit)
		entries = d.Entries // an override is keyed by the values as they are
	case def == nil || def.Unlimited:
		return "", ""
	default:
		unit, source = unitName(def.WindowSeconds), "config"
	}
	return Descriptor{Entries: entries}.String() + "@" + unit, source
}

func unitName(window int) string {
	switch window {
	case 1:
		return "SECOND"
	case 60:
		return "MINUTE"
	case 3600:
		return "HOUR"
	case 86400:
		return "DAY"
	}
	return fmt.Sprintf("%ds", window)
}

// classify sets Cause on the differences of one request no allowlist
// entry allows, then records the request and its answers for the ones
// after it: it sees every request of a sequence, in order, diffs or not.
func (c *classifier) classify(req Request, envoy Answer, diffs []Difference) {
	if req.Seq != c.seq {
		c.seq, c.envoyOver, c.differed, c.sources = req.Seq, map[string]bool{}, map[string]bool{}, map[string]map[string]bool{}
	}
	keys := make([]string, len(req.Descriptors))
	for i := range req.Descriptors {
		key, source := c.counter(req, i)
		keys[i] = key
		if key != "" {
			if c.sources[key] == nil {
				c.sources[key] = map[string]bool{}
			}
			c.sources[key][source] = true
		}
	}
	descCause := map[int]string{}
	for j := range diffs {
		df := &diffs[j]
		if df.Allowed != nil {
			continue
		}
		switch df.Kind {
		case kindError:
			df.Cause = causeRefused
			if strings.Contains(df.Ours, "requests_per_unit") || strings.Contains(df.Envoy, "requests_per_unit") {
				df.Cause = causeOverrideZero
			}
		case kindOverall, kindStatuses:
			continue // after the descriptors'
		default:
			df.Cause = c.descriptorCause(req, envoy, keys, df.Descriptor, df.Kind)
			if _, ok := descCause[df.Descriptor]; !ok || df.Kind == kindCode {
				descCause[df.Descriptor] = df.Cause
			}
		}
	}
	for j := range diffs {
		df := &diffs[j]
		if df.Allowed != nil || (df.Kind != kindOverall && df.Kind != kindStatuses) {
			continue
		}
		df.Cause = causeOther
		for i := range req.Descriptors {
			if cause, ok := descCause[i]; ok {
				df.Cause = cause
				break
			}
		}
	}
	for _, df := range diffs {
		for i, key := range keys {
			// A refusal differs on every counter of the request.
			if key != "" && (df.Descriptor == i || df.Kind == kindError) {
				c.differed[key] = true
			}
		}
	}
	for i, st := range envoy.Statuses {
		if i < len(keys) && keys[i] != "" && st.Code == "OVER_LIMIT" {
			c.envoyOver[keys[i]] = true
		}
	}
}

func (c *classifier) descriptorCause(req Request, envoy Answer, keys []string, i int, kind string) string {
	d := req.Descriptors[i]
	def, _ := c.cfg.match(req.Domain, d.Entries)
	key := keys[i]
	switch {
	case d.Limit != nil && d.Limit.RequestsPerUnit == 0:
		return causeOverrideZero
	case d.Limit == nil && c.replacesAcross(req, i):
		return causeReplaces
	case d.Limit == nil && def != nil && def.Mode == ratelimit.ModeShadow:
		return causeShadow
	case key != "" && count(keys, key) > 1:
		return causeDuplicate
	case key != "" && len(c.sources[key]) > 1:
		return causeOverrideShare
	case d.Limit == nil && def != nil && def.Unlimited:
		return causeUnlimited
	case kind == kindRemaining && i < len(envoy.Statuses) && envoy.Statuses[i].Code == "OVER_LIMIT":
		return causeOverRemaining
	case c.envoyOver[key]:
		return causePastLimit
	case c.differed[key]:
		return causeFollows
	case d.HitsAddend != nil && *d.HitsAddend == 0:
		return causeHitsZero
	}
	return causeOther
}

// replacesAcross reports whether descriptor i's limit replaces, or is
// replaced by, the limit of another descriptor of the request (Envoy's
// service applies replaces across all of a request's descriptors).
func (c *classifier) replacesAcross(req Request, i int) bool {
	t, _ := c.cfg.match(req.Domain, req.Descriptors[i].Entries)
	if t == nil {
		return false
	}
	for k, o := range req.Descriptors {
		r, _ := c.cfg.match(req.Domain, o.Entries)
		if k == i || r == nil || o.Limit != nil {
			continue
		}
		if (t.LimitName != "" && slices.Contains(r.Replaces, t.LimitName)) || (r.LimitName != "" && slices.Contains(t.Replaces, r.LimitName)) {
			return true
		}
	}
	return false
}

func count(keys []string, key string) int {
	n := 0
	for _, k := range keys {
		if k == key {
			n++
		}
	}
	return n
}
