package validate

import (
	"fmt"
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const (
	// maxNameBytes bounds names and subjects (ratelimit.MaxNameBytes).
	maxNameBytes = ratelimit.MaxNameBytes
	// maxTextBytes bounds descriptions, notes and quarantine reasons.
	maxTextBytes = 1024
)

// GroupName checks a rate-limit group name (a definition of entity type group
// or server_group, or one of a membership's groups) and returns it trimmed.
// field is the JSON field reported on failure, e.g. "name" or "groups[0]".
// The reserved quarantine groups are valid group names; only definitions
// outside the quarantine axis refuse them.
func GroupName(field, name string) (string, error) {
	return single(groupName(field, name))
}

// Subject returns the canonical subject for a subject type: user and client
// subjects are trimmed, server subjects are normalized like mcp_server names
// and agent subjects like a2a_agent paths, so a membership matches the name
// the gateway sees whichever way the operator spelled it.
func Subject(subjectType, subject string) (string, error) {
	return single(normalizeSubject(subjectType, subject))
}

// TargetName returns the canonical name for an entity type, spelled the one
// way definitions, members, memberships and ids all store it:
//
//	mcp_server    "/peer/x/"          -> "peer/x"
//	mcp_server    "MCPGW"             -> "mcpgw" (server and agent names are case-insensitive)
//	a2a_agent     "booking-agent"     -> "/booking-agent"
//	mcp_tool      "/mcpgw/:search"    -> "mcpgw:search" (the tool keeps its case)
//	a2a_skill     "booking:find"      -> "/booking:find"
//	group, server_group: group names, trimmed
func TargetName(entityType, name string) (string, error) {
	normalize := nameNormalizer(entityType)
	if normalize == nil {
		return single("", check("entity_type", entityType, entityTypeRule))
	}
	return single(normalize("name", name))
}

// normalizer turns a raw name into its canonical form or reports why it
// cannot, naming field.
type normalizer func(field, raw string) (string, *FieldError)

// distinct normalizes each element of the list field with norm, which is
// given the element's own field ("members[2]"), collecting the problems,
// and returns the normalized elements without repeats, in first-seen
// order.
func distinct(probs *problems, field string, raw []string, norm normalizer) []string {
	out := make([]string, 0, len(raw))
	seen := make(map[string]bool, len(raw))
	for i, s := range raw {
		name, fe := norm(fmt.Sprintf("%s[%d]", field, i), s)
		if fe != nil {
			probs.add(fe)
			continue
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

// nameNormalizer returns the normalizer for an entity type's names, or nil
// for an unknown entity type.
func nameNormalizer(entityType string) normalizer {
	norm := ratelimit.NameNormalizer(entityType)
	if norm == nil {
		return nil
	}
	return func(field, raw string) (string, *FieldError) { return fromName(norm(field, raw)) }
}

// normalizeSubject reports an unknown subject type rather than guessing how
// to read the subject.
func normalizeSubject(subjectType, subject string) (string, *FieldError) {
	switch subjectType {
	case ratelimit.SubjectUser, ratelimit.SubjectClient:
		// User names and client ids come from the identity provider
		// verbatim: emails, URNs and paths are all legitimate.
		return plainName("subject", subject)
	case ratelimit.SubjectServer:
		return serverName("subject", subject)
	case ratelimit.SubjectAgent:
		return agentPath("subject", subject)
	case ratelimit.SubjectNetwork:
		return networkCIDR("subject", subject)
	case ratelimit.SubjectTeam:
		return teamName("subject", subject)
	}
	return "", check("subject_type", subjectType, subjectTypeRule)
}

// The name rules themselves live in pkg/ratelimit (name.go), with no
// dependency, so that gateways normalize target names exactly as they are
// stored; these adapters give them this package's FieldError.

// NameRule is the one rule on every name and subject (ratelimit.NameRule).
const NameRule = ratelimit.NameRule

func fromName(s string, ne *ratelimit.NameError) (string, *FieldError) {
	return s, fieldProblem(ne)
}

func fieldProblem(ne *ratelimit.NameError) *FieldError {
	if ne == nil {
		return nil
	}
	return &FieldError{Field: ne.Field, Message: ne.Message}
}

// plainName trims s and applies the rules every name shares.
func plainName(field, s string) (string, *FieldError) { return fromName(ratelimit.PlainName(field, s)) }

// spaceProblem refuses whitespace inside a name or subject being stored
// (ratelimit.SpaceProblem): on writes only, not on ids and filters.
func spaceProblem(field, s string) *FieldError { return fieldProblem(ratelimit.SpaceProblem(field, s)) }

// groupName keeps group names to a charset that is safe in ids, counter keys,
// URLs and shell arguments without quoting.
func groupName(field, raw string) (string, *FieldError) {
	return fromName(ratelimit.GroupName(field, raw))
}

func isNotGroupNameChar(r rune) bool { return ratelimit.IsNotGroupNameChar(r) }

// serverName drops leading and trailing slashes and lower-cases.
func serverName(field, raw string) (string, *FieldError) {
	return fromName(ratelimit.ServerName(field, raw))
}

// agentPath gives an agent exactly one leading slash and no trailing one.
func agentPath(field, raw string) (string, *FieldError) {
	return fromName(ratelimit.AgentPath(field, raw))
}

// text checks free text (descriptions, notes, reasons) and returns it
// trimmed. multiline admits newlines and tabs, which descriptions written in
// YAML block scalars legitimately contain.
func text(field, raw string, multiline bool) (string, *FieldError) {
	s := strings.TrimSpace(raw)
	forbidden := unicode.IsControl
	controls := "control characters"
	if multiline {
		forbidden = func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }
		controls = "control characters other than newline and tab"
	}
	switch {
	case !utf8.ValidString(s):
		return "", fieldError(field, "must be valid UTF-8")
	case strings.ContainsFunc(s, forbidden):
		return "", fieldError(field, "must not contain %s", controls)
	case len(s) > maxTextBytes:
		return "", fieldError(field, "must be at most %d bytes (got %d)", maxTextBytes, len(s))
	}
	return s, nil
}

// isReservedGroup reports whether name is one of the quarantine groups.
func isReservedGroup(name string) bool {
	return name == ratelimit.GroupQuarantineCallers || name == ratelimit.GroupQuarantineTargets
}

// networkCIDR reads a network subject: a CIDR in canonical masked form
// (10.1.0.0/16, 2001:db8::/48). Spelling is normalized (2001:DB8::/48 is
// 2001:db8::/48); host bits, a bare address, a zone and an IPv4-mapped
// IPv6 network are refused, each with the form to write instead.
func networkCIDR(field, s string) (string, *FieldError) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fieldError(field, "must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48")
	}
	if len(s) > 64 {
		return "", fieldError(field, "must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48 (got %d characters)", len(s))
	}
	if !strings.Contains(s, "/") {
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
			a = a.Unmap()
			return "", fieldError(field, "must be a network in CIDR form: write %s for the one address (got %q)", netip.PrefixFrom(a, a.BitLen()), s)
		}
		return "", fieldError(field, "must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48 (got %q)", s)
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		addr, bits, _ := strings.Cut(s, "/")
		if a, aerr := netip.ParseAddr(addr); aerr == nil && a.Zone() == "" {
			return "", fieldError(field, "prefix length %q: must be a number from 0 to %d for an IPv%d network (got %q)", bits, a.BitLen(), map[bool]int{true: 4, false: 6}[a.Is4()], s)
		}
		return "", fieldError(field, "must be a network in CIDR form, such as 10.1.0.0/16 or 2001:db8::/48 (got %q)", s)
	}
	if p.Addr().Is4In6() {
		a := p.Addr().Unmap()
		hint := "an IPv4 network"
		if p.Bits() >= 96 {
			hint = netip.PrefixFrom(a, p.Bits()-96).Masked().String()
		}
		return "", fieldError(field, "an IPv4-mapped IPv6 network: write it as IPv4 (%s): client addresses are unmapped before matching (got %q)", hint, s)
	}
	if m := p.Masked(); m != p {
		return "", fieldError(field, "has host bits set: the network is %s (got %q)", m, s)
	}
	return p.String(), nil
}

// teamName is a team's name: a plain name without '|', which separates the
// parts of a counter key (team:<name> keys a team's buckets).
func teamName(field, s string) (string, *FieldError) {
	s, fe := plainName(field, s)
	if fe == nil && strings.Contains(s, "|") {
		fe = fieldError(field, "a team name must not contain '|' (got %q): it separates the parts of a counter key", s)
	}
	return s, fe
}
