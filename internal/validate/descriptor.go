package validate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// descriptorName reconciles a descriptor definition's name with its
// domain and descriptor entries: either may be given, both must agree, and
// the name written is the canonical one. Definitions of other entity types
// must not carry descriptor fields. It returns d with Name, Domain and
// Descriptor filled.
func descriptorName(probs *problems, d ratelimit.Definition) ratelimit.Definition {
	if d.EntityType != ratelimit.EntityDescriptor {
		for _, f := range []struct {
			name string
			set  bool
		}{{"domain", d.Domain != ""}, {"descriptor", len(d.Descriptor) > 0}, {"unlimited", d.Unlimited},
			{"limit_name", d.LimitName != ""}, {"replaces", len(d.Replaces) > 0}, {"share_threshold", d.ShareThreshold},
			{"detailed_metric", d.DetailedMetric}, {"value_to_metric", d.ValueToMetric}} {
			if f.set {
				probs.add(fieldError(f.name, "allowed only on target descriptor definitions (entity_type is %q)", d.EntityType))
			}
		}
		return d
	}
	structured := d.Domain != "" || len(d.Descriptor) > 0
	if structured {
		ok := true
		if strings.TrimSpace(d.Domain) == "" {
			probs.add(fieldError("domain", "must not be empty: the Envoy domain the descriptor belongs to"))
			ok = false
		} else if fe := descriptorText("domain", d.Domain); fe != nil {
			probs.add(fe)
			ok = false
		}
		if len(d.Descriptor) == 0 {
			probs.add(fieldError("descriptor", "must list at least one entry (key and optional value)"))
			ok = false
		}
		if len(d.Descriptor) > ratelimit.MaxDescriptorEntries {
			probs.add(fieldError("descriptor", "must list at most %d entries (got %d)", ratelimit.MaxDescriptorEntries, len(d.Descriptor)))
			ok = false
		}
		for i, e := range d.Descriptor {
			if e.Key == "" {
				probs.add(fieldError(fmt.Sprintf("descriptor[%d].key", i), "must not be empty"))
				ok = false
			} else if fe := descriptorText(fmt.Sprintf("descriptor[%d].key", i), e.Key); fe != nil {
				probs.add(fe)
				ok = false
			}
			if fe := descriptorText(fmt.Sprintf("descriptor[%d].value", i), e.Value); e.Value != "" && fe != nil {
				probs.add(fe)
				ok = false
			}
		}
		if !ok {
			return d
		}
		canon := ratelimit.DescriptorName(d.Domain, d.Descriptor)
		switch {
		case d.Name == "":
			d.Name = canon
		case strings.TrimSpace(d.Name) != canon:
			probs.add(fieldError("name", "%q does not agree with domain and descriptor, whose name is %q (give either, or both alike)", d.Name, canon))
			return d
		}
	}
	domain, entries, err := ratelimit.ParseDescriptorName("name", strings.TrimSpace(d.Name))
	if err != nil {
		if !structured {
			probs.add(&FieldError{Field: err.Field, Message: err.Message + " (or give domain and descriptor instead of the name)"})
		}
		return d
	}
	d.Domain, d.Descriptor = domain, entries
	return d
}

// descriptorText applies the rules every domain, key and value shares:
// valid UTF-8, no control characters, bounded.
func descriptorText(field, s string) *FieldError {
	switch {
	case !utf8.ValidString(s):
		return fieldError(field, "must be valid UTF-8 (got %q)", s)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fieldError(field, "must not contain control characters (got %q)", s)
	case len(s) > ratelimit.MaxNameBytes:
		return fieldError(field, "must be at most %d bytes (got %d)", ratelimit.MaxNameBytes, len(s))
	}
	return nil
}

// checkDescriptor checks the rate and flags of a descriptor definition:
// a rate or unlimited (not both), limit_name and replaces, share_threshold
// only with a wildcard entry.
func checkDescriptor(probs *problems, d ratelimit.Definition) {
	if d.EntityType != ratelimit.EntityDescriptor {
		return
	}
	if d.Unlimited {
		probs.add(misplaced("max_requests", d.MaxRequests, "not allowed with unlimited: an unlimited descriptor has no rate"))
		probs.add(misplaced("burst", d.Burst, "not allowed with unlimited: an unlimited descriptor has no rate"))
		if d.AlgorithmOrDefault() != ratelimit.AlgorithmFixedWindow {
			probs.add(fieldError("algorithm", "not allowed with unlimited: an unlimited descriptor counts nothing (got %q)", d.Algorithm))
		}
		if d.Mode == ratelimit.ModeShadow {
			probs.add(fieldError("mode", "shadow is not allowed with unlimited: an unlimited descriptor never denies"))
		}
	}
	if d.LimitName != "" {
		if fe := descriptorText("limit_name", d.LimitName); fe != nil {
			probs.add(fe)
		} else if strings.TrimSpace(d.LimitName) != d.LimitName {
			probs.add(fieldError("limit_name", "must not begin or end with whitespace (got %q)", d.LimitName))
		}
	}
	seen := map[string]int{}
	for i, r := range d.Replaces {
		field := fmt.Sprintf("replaces[%d]", i)
		switch {
		case r == "":
			probs.add(fieldError(field, "must not be empty: name the limit_name of the limit this one replaces"))
		case r == d.LimitName:
			probs.add(fieldError(field, "%q is this definition's own limit_name; a limit cannot replace itself", r))
		default:
			if fe := descriptorText(field, r); fe != nil {
				probs.add(fe)
			} else if j, dup := seen[r]; dup {
				probs.add(fieldError(field, "%q is replaces[%d] again: list each name once", r, j))
			}
		}
		seen[r] = i
	}
	if d.ShareThreshold {
		wild := false
		for _, e := range d.Descriptor {
			wild = wild || strings.Contains(e.Value, "*")
		}
		if !wild {
			probs.add(fieldError("share_threshold", "needs a wildcard value (one holding '*') in the descriptor: it makes every value matching the wildcard share one counter"))
		}
	}
}
