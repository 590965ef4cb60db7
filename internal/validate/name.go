package validate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const (
	// maxNameBytes bounds names and subjects: they are part of ids, counter
	// keys and log lines, and no real server path or user name comes close.
	maxNameBytes = 256
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
	switch entityType {
	case ratelimit.EntityGroup, ratelimit.EntityServerGroup:
		return groupName
	case ratelimit.EntityMCPServer:
		return serverName
	case ratelimit.EntityA2AAgent:
		return agentPath
	case ratelimit.EntityMCPTool:
		return leafName(serverName, "<server>:<tool>", "tool")
	case ratelimit.EntityA2ASkill:
		return leafName(agentPath, "<agent>:<skill>", "skill")
	}
	return nil
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
	}
	return "", check("subject_type", subjectType, subjectTypeRule)
}

// plainName trims s and applies the rules every name shares.
func plainName(field, s string) (string, *FieldError) {
	s = strings.TrimSpace(s)
	return s, nameProblem(field, s)
}

// NameRule is the one rule on every name and subject (users, clients,
// servers, agents, tools, skills, groups), stated where messages can cite
// it: 1 to 256 bytes of UTF-8, any script, no whitespace and no control
// characters, surrounding whitespace trimmed. Group names (group and
// server_group definitions, membership groups) are further kept to ASCII
// letters, digits, '.', '_' and '-', since they sit inside ids and counter
// keys as they are.
const NameRule = "names and subjects are 1-256 bytes of UTF-8 (any script) without whitespace or control characters"

// nameProblem applies the rules every normalized name and subject shares.
// Invalid UTF-8 is refused because PostgreSQL text columns refuse it too, and
// a name the store cannot hold should fail here with a clear message.
func nameProblem(field, s string) *FieldError {
	switch {
	case s == "":
		return fieldError(field, "must not be empty")
	case !utf8.ValidString(s):
		return fieldError(field, "must be valid UTF-8 (got %q)", s)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fieldError(field, "must not contain control characters (got %q)", s)
	case len(s) > maxNameBytes:
		return fieldError(field, "must be at most %d bytes (got %d)", maxNameBytes, len(s))
	}
	return nil
}

// spaceProblem refuses whitespace inside a name or subject being stored, as
// group names always have: "Alice Smith" is a display name, not what a
// gateway passes as a username, and a name with a space needs quoting in
// every shell line, URL and log search. It applies to writes only, not to
// ids and filters, so that a name stored before the rule can still be
// found, released and deleted.
func spaceProblem(field, s string) *FieldError {
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return fieldError(field, "must not contain whitespace (got %q): %s", s, NameRule)
	}
	return nil
}

// groupName keeps group names to a charset that is safe in ids, counter keys,
// URLs and shell arguments without quoting.
func groupName(field, raw string) (string, *FieldError) {
	s, fe := plainName(field, raw)
	if fe == nil {
		fe = spaceProblem(field, s)
	}
	if fe != nil {
		return "", fe
	}
	if strings.ContainsFunc(s, isNotGroupNameChar) {
		return "", fieldError(field, "must contain only ASCII letters, digits, '.', '_' and '-' (got %q)", s)
	}
	return s, nil
}

func isNotGroupNameChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	case r == '.', r == '_', r == '-':
		return false
	}
	return true
}

// serverName drops leading and trailing slashes: the gateway classifies
// "/mcpgw/" and "mcpgw" as the same server, so they must be one name here.
// Inner segments stay, so a federated "peer/x" keeps its full path.
func serverName(field, raw string) (string, *FieldError) {
	return slashPath(field, raw, "")
}

// agentPath gives an agent exactly one leading slash and no trailing one,
// matching the /agent/... paths the gateway routes on.
func agentPath(field, raw string) (string, *FieldError) {
	return slashPath(field, raw, "/")
}

// slashPath strips surrounding whitespace and slashes together, in one pass,
// so that "/ x /" and " /x/ " both settle on the same name and normalizing the
// result again changes nothing; then it prepends prefix. Server and agent
// names are case-insensitive, as the gateway reads paths
// (enforce.TargetFromURI lower-cases them): they are stored lower-cased, so
// "MCPGW" and "mcpgw" are one server.
func slashPath(field, raw, prefix string) (string, *FieldError) {
	trimmed := strings.TrimSpace(raw)
	inner := strings.TrimFunc(trimmed, isSpaceOrSlash)
	if trimmed != "" && inner == "" {
		return "", fieldError(field, "must name a path, not only slashes (got %q)", trimmed)
	}
	if inner == "" {
		return "", fieldError(field, "must not be empty")
	}
	if utf8.ValidString(inner) { // else nameProblem refuses it as it is
		inner = strings.ToLower(inner)
	}
	s := prefix + inner
	return s, nameProblem(field, s)
}

func isSpaceOrSlash(r rune) bool { return r == '/' || unicode.IsSpace(r) }

// leafName returns the normalizer for <parent>:<leaf> names (mcp_tool,
// a2a_skill). It splits at the last ':' so that the parent may itself contain
// ':' while the leaf cannot, which is what makes the split reproducible.
func leafName(parent normalizer, shape, leafKind string) normalizer {
	return func(field, raw string) (string, *FieldError) {
		s := strings.TrimSpace(raw)
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return "", fieldError(field, "must be %s (got %q)", shape, s)
		}
		parentPart, leaf := s[:i], strings.TrimSpace(s[i+1:])
		if strings.TrimFunc(parentPart, isSpaceOrSlash) == "" {
			return "", fieldError(field, "must be %s with a name before the last ':' (got %q)", shape, s)
		}
		if leaf == "" {
			return "", fieldError(field, "must be %s with a %s after the last ':' (got %q)", shape, leafKind, s)
		}
		if strings.ContainsRune(leaf, '/') {
			return "", fieldError(field, "the %s %q must not contain '/'", leafKind, leaf)
		}
		p, fe := parent(field, parentPart)
		if fe != nil {
			return "", fe
		}
		full := p + ":" + leaf
		return full, nameProblem(field, full)
	}
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
