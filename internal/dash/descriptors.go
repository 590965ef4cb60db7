package dash

import (
	"fmt"
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Descriptor definitions (Envoy's rate-limit descriptors, docs/envoy.md)
// in the Limits view: the table names a definition by its domain and its
// entries as written (the canonical name percent-encodes them), and the
// detail pane shows the Envoy fields one by one.

// descriptorParts is a descriptor definition's domain and entries: as the
// server returns them, else read back from its canonical name. ok is
// false for a definition of another kind, or a name that does not parse.
func descriptorParts(d ratelimit.Definition) (domain string, entries []ratelimit.DescriptorEntry, ok bool) {
	if d.EntityType != ratelimit.EntityDescriptor {
		return "", nil, false
	}
	if d.Domain != "" && len(d.Descriptor) > 0 {
		return d.Domain, d.Descriptor, true
	}
	domain, entries, err := ratelimit.ParseDescriptorName("name", d.Name)
	if err != nil {
		return "", nil, false
	}
	return domain, entries, true
}

// definitionName is the NAME cell: a descriptor definition's domain, a
// colon and its entries as key=value, comma-separated ("edge: route=
// checkout, user"); every other definition's name as stored.
func definitionName(d ratelimit.Definition) string {
	domain, entries, ok := descriptorParts(d)
	if !ok {
		return d.Name
	}
	parts := make([]string, len(entries))
	for i, e := range entries {
		parts[i] = e.String()
	}
	return domain + ": " + strings.Join(parts, ", ")
}

// descriptorEntryText is one entry in the detail pane: key=value, a
// wildcard marked as one (shared when share_threshold is set), a key alone
// as matching every value, each on its own counter.
func descriptorEntryText(e ratelimit.DescriptorEntry, shared bool) string {
	switch {
	case e.Value == "":
		return e.Key + " (every value, each its own)"
	case strings.Contains(e.Value, "*"):
		if shared {
			return e.String() + " (wildcard, shared)"
		}
		return e.String() + " (wildcard, each its own)"
	}
	return e.String()
}

// descriptorRate is the rate in Envoy's words: "20 per minute", the
// window's own length when it is not an Envoy unit, "unlimited" for a
// definition that never limits.
func descriptorRate(d ratelimit.Definition) string {
	if d.Unlimited {
		return "unlimited"
	}
	if d.MaxRequests == nil {
		return "-"
	}
	unit := ratelimit.DescriptorUnit(d.WindowSeconds)
	if unit == "" {
		unit = formatWindow(d.WindowSeconds)
	}
	return fmt.Sprintf("%d per %s", *d.MaxRequests, unit)
}

// descriptorLines are the detail pane's lines of a descriptor definition:
// its domain, rate and unlimited (the algorithm is on the line above,
// as for every definition); its limit name and
// what it replaces; shadow mode, share_threshold and the metric options;
// then every entry, wrapped.
func descriptorLines(st *Styles, d ratelimit.Definition, w int) []string {
	domain, entries, ok := descriptorParts(d)
	if !ok {
		return nil
	}
	lines := []string{
		field(st, "domain", domain) + "  " + field(st, "rate", descriptorRate(d)) + "  " + field(st, "unlimited", yesNo(d.Unlimited)),
		field(st, "limit name", d.LimitName) + "  " + field(st, "replaces", strings.Join(d.Replaces, ", ")),
		field(st, "shadow mode", yesNo(d.Mode == ratelimit.ModeShadow)) + "  " + field(st, "share threshold", yesNo(d.ShareThreshold)) +
			"  " + field(st, "detailed metric", yesNo(d.DetailedMetric || d.ValueToMetric)),
		st.Label.Render(fmt.Sprintf("entries (%d):", len(entries))),
	}
	texts := make([]string, len(entries))
	for i, e := range entries {
		texts[i] = descriptorEntryText(e, d.ShareThreshold)
	}
	return append(lines, wrapWords(texts, w-2, "  ")...)
}
