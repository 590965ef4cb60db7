package ratelimit

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Descriptor definitions: Envoy's rate-limit descriptors as a target type
// (docs/envoy.md). A descriptor definition is a target definition of
// entity type EntityDescriptor whose name is its domain and its descriptor
// path in one canonical string:
//
//	<domain>/<key>[=<value>]/<key>[=<value>]...
//
// (DescriptorName), each part percent-encoded (every byte outside
// A-Z a-z 0-9 - . _ ~ : @ + , is %XX), except that a '*' in a value is
// kept: it is Envoy's wildcard (value "files/*" is the path segment
// "files%2F*"). A definition is one leaf of Envoy's nested descriptor
// tree; the nodes above it carry no limit of their own. Its rate is its
// max_requests per window_seconds (Envoy's requests_per_unit per second,
// minute, hour or day is 1, 60, 3600 or 86400 seconds) with any algorithm,
// or Unlimited.

// EntityDescriptor is the entity type of descriptor definitions (on the
// target axis).
const EntityDescriptor = "descriptor"

// MaxDescriptorNameBytes bounds a descriptor definition's canonical name
// (the definitions table holds names up to 600 bytes).
const MaxDescriptorNameBytes = 512

// MaxDescriptorEntries bounds the depth of a descriptor.
const MaxDescriptorEntries = 16

// DescriptorEntry is one key and optional value of a descriptor. An empty
// Value in a definition matches every value of Key, each value counting on
// its own; a Value holding '*' is a wildcard (Envoy's "prefix*").
type DescriptorEntry struct {
	Key   string `json:"key" yaml:"key"`
	Value string `json:"value,omitempty" yaml:"value,omitempty"`
}

// DescriptorFields are the fields only descriptor definitions have. They
// sit in Definition as one embedded block (the JSON and YAML fields are
// flat: "domain", "descriptor", ...).
type DescriptorFields struct {
	// Domain is Envoy's domain. Domain and Descriptor are the definition's
	// name in structured form: given with or without the name, they must
	// agree with it; the server always returns them.
	Domain     string            `json:"domain,omitempty" yaml:"domain,omitempty"`
	Descriptor []DescriptorEntry `json:"descriptor,omitempty" yaml:"descriptor,omitempty"`
	// Unlimited matches and never limits (Envoy's unlimited: true, and a
	// leaf without rate_limit): it takes no max_requests.
	Unlimited bool `json:"unlimited,omitempty" yaml:"unlimited,omitempty"`
	// LimitName is Envoy's rate_limit.name: what Replaces of another
	// definition names.
	LimitName string `json:"limit_name,omitempty" yaml:"limit_name,omitempty"`
	// Replaces names the limits (LimitName) this one replaces when both
	// match one request: those are not evaluated.
	Replaces []string `json:"replaces,omitempty" yaml:"replaces,omitempty"`
	// ShareThreshold: every value matching the wildcard entries shares one
	// counter (by default each value counts on its own).
	ShareThreshold bool `json:"share_threshold,omitempty" yaml:"share_threshold,omitempty"`
	// DetailedMetric labels this definition's metrics with the request's
	// values (bounded otherwise: domain and keys only).
	DetailedMetric bool `json:"detailed_metric,omitempty" yaml:"detailed_metric,omitempty"`
	// ValueToMetric is Envoy's value_to_metric, kept for the round trip
	// of an imported configuration; metrics treat it as DetailedMetric.
	ValueToMetric bool `json:"value_to_metric,omitempty" yaml:"value_to_metric,omitempty"`
}

// DescriptorFieldsSet reports whether any descriptor field is set. (The
// helpers on DescriptorFields are functions, not methods: methods would be
// promoted to Definition, and an IsZero or Equal there would change how
// YAML and comparison libraries treat every definition.)
func DescriptorFieldsSet(f DescriptorFields) bool {
	return !descriptorFieldsZero(f)
}

func descriptorFieldsZero(f DescriptorFields) bool {
	return f.Domain == "" && len(f.Descriptor) == 0 && !f.Unlimited && f.LimitName == "" &&
		len(f.Replaces) == 0 && !f.ShareThreshold && !f.DetailedMetric && !f.ValueToMetric
}

// StoredDescriptorFields is what the definitions table keeps of f beyond
// the name (the domain and descriptor are the name).
func StoredDescriptorFields(f DescriptorFields) DescriptorFields {
	f.Domain, f.Descriptor = "", nil
	return f
}

// EqualDescriptorFields compares the fields a definition update can
// change (not the name parts).
func EqualDescriptorFields(f, g DescriptorFields) bool {
	return f.Unlimited == g.Unlimited && f.LimitName == g.LimitName && equalStrings(f.Replaces, g.Replaces) &&
		f.ShareThreshold == g.ShareThreshold && f.DetailedMetric == g.DetailedMetric && f.ValueToMetric == g.ValueToMetric
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// DescriptorName is the canonical name of a descriptor definition.
func DescriptorName(domain string, entries []DescriptorEntry) string {
	var b strings.Builder
	b.WriteString(descriptorEscape(domain, false))
	for _, e := range entries {
		b.WriteByte('/')
		b.WriteString(descriptorEscape(e.Key, false))
		if e.Value != "" {
			b.WriteByte('=')
			b.WriteString(descriptorEscape(e.Value, true))
		}
	}
	return b.String()
}

// DescriptorCounterPath is the path a request's descriptor counts under:
// DescriptorName with the request's values, a '*' in them escaped (so a
// request value never reads as a wildcard), except for the entries
// shared names (share_threshold: the wildcard pattern in place of the
// value).
func DescriptorCounterPath(domain string, entries []DescriptorEntry, shared []string) string {
	return string(AppendDescriptorCounterPath(make([]byte, 0, descriptorPathLen(domain, entries)), domain, entries, shared))
}

// AppendDescriptorCounterPath appends DescriptorCounterPath(domain,
// entries, shared) to b: the gateways' hot path builds a counter key
// around it in one allocation.
func AppendDescriptorCounterPath(b []byte, domain string, entries []DescriptorEntry, shared []string) []byte {
	b = appendDescriptorEscaped(b, domain, false)
	for i, e := range entries {
		b = append(b, '/')
		b = appendDescriptorEscaped(b, e.Key, false)
		if i < len(shared) && shared[i] != "" {
			b = append(b, '=')
			b = appendDescriptorEscaped(b, shared[i], true)
			continue
		}
		if e.Value != "" {
			b = append(b, '=')
			b = appendDescriptorEscaped(b, e.Value, false)
		}
	}
	return b
}

// descriptorPathLen is the length of a counter path with nothing to
// escape: a good first capacity.
func descriptorPathLen(domain string, entries []DescriptorEntry) int {
	n := len(domain)
	for _, e := range entries {
		n += 2 + len(e.Key) + len(e.Value)
	}
	return n
}

// appendDescriptorEscaped appends descriptorEscape(s, star) to b.
func appendDescriptorEscaped(b []byte, s string, star bool) []byte {
	const hex = "0123456789ABCDEF"
	for i := range len(s) {
		c := s[i]
		if descriptorSafe(c) || (star && c == '*') {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return b
}

func descriptorSafe(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '.', '_', '~', ':', '@', '+', ',':
		return true
	}
	return false
}

func descriptorEscape(s string, star bool) string {
	n := 0
	for i := range len(s) {
		if !descriptorSafe(s[i]) && !(star && s[i] == '*') {
			n++
		}
	}
	if n == 0 {
		return s
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(s)+2*n)
	for i := range len(s) {
		c := s[i]
		if descriptorSafe(c) || (star && c == '*') {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return string(b)
}

func descriptorUnescape(field, s string, star bool) (string, *NameError) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
				return "", nameError(field, "%q: '%%' must be followed by two upper-case hex digits", s)
			}
			v := byte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			if descriptorSafe(v) || (star && v == '*') {
				return "", nameError(field, "%q: %%%02X must be written as %q (the canonical form escapes only what it must)", s, v, string(v))
			}
			b.WriteByte(v)
			i += 2
		case descriptorSafe(c) || (star && c == '*'):
			b.WriteByte(c)
		default:
			return "", nameError(field, "%q: byte %q must be percent-encoded as %%%02X", s, string(c), c)
		}
	}
	out := b.String()
	if !utf8.ValidString(out) {
		return "", nameError(field, "%q: must decode to valid UTF-8", s)
	}
	return out, nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// ParseDescriptorName reads a canonical descriptor name back into its
// domain and entries, or says why it is not one, naming field.
func ParseDescriptorName(field, name string) (domain string, entries []DescriptorEntry, err *NameError) {
	if name == "" {
		return "", nil, nameError(field, "must not be empty: want <domain>/<key>[=<value>]...")
	}
	if len(name) > MaxDescriptorNameBytes {
		return "", nil, nameError(field, "must be at most %d bytes (got %d)", MaxDescriptorNameBytes, len(name))
	}
	parts := strings.Split(name, "/")
	if len(parts) < 2 {
		return "", nil, nameError(field, "%q: want <domain>/<key>[=<value>]... with at least one entry", name)
	}
	if len(parts)-1 > MaxDescriptorEntries {
		return "", nil, nameError(field, "%q: at most %d entries (got %d)", name, MaxDescriptorEntries, len(parts)-1)
	}
	if domain, err = descriptorUnescape(field, parts[0], false); err != nil {
		return "", nil, err
	}
	if domain == "" {
		return "", nil, nameError(field, "%q: the domain must not be empty", name)
	}
	for _, p := range parts[1:] {
		k, v, hasValue := strings.Cut(p, "=")
		key, err := descriptorUnescape(field, k, false)
		if err != nil {
			return "", nil, err
		}
		if key == "" {
			return "", nil, nameError(field, "%q: every entry needs a key", name)
		}
		value := ""
		if hasValue {
			if value, err = descriptorUnescape(field, v, true); err != nil {
				return "", nil, err
			}
			if value == "" {
				return "", nil, nameError(field, "%q: entry %q: leave out '=' for an entry without a value", name, k)
			}
		}
		entries = append(entries, DescriptorEntry{Key: key, Value: value})
	}
	return domain, entries, nil
}

// DescriptorNameNormalizer checks a descriptor definition's name is
// canonical (see DescriptorName).
func DescriptorNameNormalizer(field, raw string) (string, *NameError) {
	domain, entries, err := ParseDescriptorName(field, raw)
	if err != nil {
		return "", err
	}
	if canon := DescriptorName(domain, entries); canon != raw {
		return "", nameError(field, "%q is not canonical: write %q", raw, canon)
	}
	return raw, nil
}

// DescriptorUnits maps Envoy's units to windows in seconds.
var descriptorUnits = []struct {
	Unit    string
	Seconds int
}{{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}}

// DescriptorUnitSeconds is the window of an Envoy unit (second, minute,
// hour, day; any case), ok false for another.
func DescriptorUnitSeconds(unit string) (int, bool) {
	for _, u := range descriptorUnits {
		if strings.EqualFold(u.Unit, unit) {
			return u.Seconds, true
		}
	}
	return 0, false
}

// DescriptorUnit is the Envoy unit of a window, "" when it is not one.
func DescriptorUnit(seconds int) string {
	for _, u := range descriptorUnits {
		if u.Seconds == seconds {
			return u.Unit
		}
	}
	return ""
}

// DescriptorUnitNames lists Envoy's units.
func DescriptorUnitNames() []string {
	out := make([]string, len(descriptorUnits))
	for i, u := range descriptorUnits {
		out[i] = u.Unit
	}
	return out
}

// String renders an entry as key=value (key alone without a value).
func (e DescriptorEntry) String() string {
	if e.Value == "" {
		return e.Key
	}
	return fmt.Sprintf("%s=%s", e.Key, e.Value)
}
