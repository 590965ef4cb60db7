package ratelimit

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The name rules live here, with no dependency, so that gateways
// (pkg/enforce) normalize target names exactly as internal/validate stores
// them: one implementation, which internal/validate calls.

// MaxNameBytes bounds names and subjects: they are part of ids, counter
// keys and log lines, and no real server path or user name comes close.
const MaxNameBytes = 256

// NameRule is the one rule on every name and subject (users, clients,
// servers, agents, tools, skills, groups), stated where messages can cite
// it: 1 to 256 bytes of UTF-8, any script, no whitespace and no control
// characters, surrounding whitespace trimmed. Group names (group and
// server_group definitions, membership groups) are further kept to ASCII
// letters, digits, '.', '_' and '-', since they sit inside ids and counter
// keys as they are.
const NameRule = "names and subjects are 1-256 bytes of UTF-8 (any script) without whitespace or control characters"

// NameError is a name that breaks a rule. Message begins with Field, so it
// reads on its own.
type NameError struct {
	Field   string
	Message string
}

func (e *NameError) Error() string { return e.Message }

func nameError(field, format string, args ...any) *NameError {
	return &NameError{Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// Normalizer turns a raw name into its canonical form or reports why it
// cannot, naming field.
type Normalizer func(field, raw string) (string, *NameError)

// NameNormalizer returns the normalizer of an entity type's names, nil for
// an unknown entity type.
func NameNormalizer(entityType string) Normalizer {
	switch entityType {
	case EntityGroup, EntityServerGroup, EntityRoute:
		return GroupName
	case EntityMCPServer:
		return ServerName
	case EntityA2AAgent:
		return AgentPath
	case EntityMCPTool:
		return mcpToolName
	case EntityA2ASkill:
		return leafName(AgentPath, "<agent>:<skill>", "skill")
	case EntityDescriptor:
		return DescriptorNameNormalizer
	case EntityUser, EntityClient, EntityTeam:
		return subjectName
	}
	return nil
}

// subjectName is the name of a definition selecting one user, client or
// team: as a membership stores that subject (trimmed, no whitespace), and
// without '|', which separates the parts of the counter keys a shadow
// definition's name ends up in.
func subjectName(field, raw string) (string, *NameError) {
	s, fe := PlainName(field, raw)
	if fe == nil {
		fe = SpaceProblem(field, s)
	}
	if fe == nil && strings.Contains(s, "|") {
		fe = nameError(field, "must not contain '|' (got %q): it separates the parts of a counter key", s)
	}
	if fe != nil {
		return "", fe
	}
	return s, nil
}

// NormalizeTargetName returns the canonical name of a target of an entity
// type (see internal/validate.TargetName), or why it is not one. ok is
// false for an unknown entity type (err is nil then).
func NormalizeTargetName(entityType, name string) (canonical string, ok bool, err *NameError) {
	norm := NameNormalizer(entityType)
	if norm == nil {
		return "", false, nil
	}
	s, fe := norm("name", name)
	return s, true, fe
}

// PlainName trims s and applies the rules every name shares.
func PlainName(field, s string) (string, *NameError) {
	s = strings.TrimSpace(s)
	return s, NameProblem(field, s)
}

// NameProblem applies the rules every normalized name and subject shares.
// Invalid UTF-8 is refused because PostgreSQL text columns refuse it too, and
// a name the store cannot hold should fail here with a clear message.
func NameProblem(field, s string) *NameError {
	switch {
	case s == "":
		return nameError(field, "must not be empty")
	case !utf8.ValidString(s):
		return nameError(field, "must be valid UTF-8 (got %q)", s)
	case strings.ContainsFunc(s, unicode.IsControl):
		return nameError(field, "must not contain control characters (got %q)", s)
	case len(s) > MaxNameBytes:
		return nameError(field, "must be at most %d bytes (got %d)", MaxNameBytes, len(s))
	}
	return nil
}

// SpaceProblem refuses whitespace inside a name or subject being stored, as
// group names always have: "Alice Smith" is a display name, not what a
// gateway passes as a username, and a name with a space needs quoting in
// every shell line, URL and log search. It applies to writes only, not to
// ids and filters, so that a name stored before the rule can still be
// found, released and deleted.
func SpaceProblem(field, s string) *NameError {
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return nameError(field, "must not contain whitespace (got %q): %s", s, NameRule)
	}
	return nil
}

// GroupName keeps group names to a charset that is safe in ids, counter keys,
// URLs and shell arguments without quoting.
func GroupName(field, raw string) (string, *NameError) {
	s, fe := PlainName(field, raw)
	if fe == nil {
		fe = SpaceProblem(field, s)
	}
	if fe != nil {
		return "", fe
	}
	if strings.ContainsFunc(s, IsNotGroupNameChar) {
		return "", nameError(field, "must contain only ASCII letters, digits, '.', '_' and '-' (got %q)", s)
	}
	return s, nil
}

// IsNotGroupNameChar reports whether r may not appear in a group name.
func IsNotGroupNameChar(r rune) bool {
	switch {
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return false
	case r == '.', r == '_', r == '-':
		return false
	}
	return true
}

// ServerName drops leading and trailing slashes: the gateway classifies
// "/mcpgw/" and "mcpgw" as the same server, so they must be one name here.
// Inner segments stay, so a federated "peer/x" keeps its full path.
func ServerName(field, raw string) (string, *NameError) {
	return slashPath(field, raw, "")
}

// AgentPath gives an agent exactly one leading slash and no trailing one,
// matching the /agent/... paths the gateway routes on.
func AgentPath(field, raw string) (string, *NameError) {
	return slashPath(field, raw, "/")
}

// slashPath strips surrounding whitespace and slashes together, in one pass,
// so that "/ x /" and " /x/ " both settle on the same name and normalizing the
// result again changes nothing; then it prepends prefix. Server and agent
// names are case-insensitive, as the gateway reads paths
// (httpgate.TargetFromURI lower-cases them): they are stored lower-cased, so
// "MCPGW" and "mcpgw" are one server.
func slashPath(field, raw, prefix string) (string, *NameError) {
	trimmed := strings.TrimSpace(raw)
	inner := strings.TrimFunc(trimmed, isSpaceOrSlash)
	if trimmed != "" && inner == "" {
		return "", nameError(field, "must name a path, not only slashes (got %q)", trimmed)
	}
	if inner == "" {
		return "", nameError(field, "must not be empty")
	}
	if utf8.ValidString(inner) { // else NameProblem refuses it as it is
		inner = strings.ToLower(inner)
	}
	s := prefix + inner
	return s, NameProblem(field, s)
}

func isSpaceOrSlash(r rune) bool { return r == '/' || unicode.IsSpace(r) }

// leafName returns the normalizer for <parent>:<leaf> names (mcp_tool,
// a2a_skill). It splits at the last ':' so that the parent may itself contain
// ':' while the leaf cannot, which is what makes the split reproducible.
func leafName(parent Normalizer, shape, leafKind string) Normalizer {
	return func(field, raw string) (string, *NameError) {
		s := strings.TrimSpace(raw)
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			return "", nameError(field, "must be %s (got %q)", shape, s)
		}
		parentPart, leaf := s[:i], strings.TrimSpace(s[i+1:])
		if strings.TrimFunc(parentPart, isSpaceOrSlash) == "" {
			return "", nameError(field, "must be %s with a name before the last ':' (got %q)", shape, s)
		}
		if leaf == "" {
			return "", nameError(field, "must be %s with a %s after the last ':' (got %q)", shape, leafKind, s)
		}
		if strings.ContainsRune(leaf, '/') {
			return "", nameError(field, "the %s %q must not contain '/'", leafKind, leaf)
		}
		p, fe := parent(field, parentPart)
		if fe != nil {
			return "", fe
		}
		full := p + ":" + leaf
		return full, NameProblem(field, full)
	}
}

// mcpToolName normalizes an mcp_tool name: <server>:<tool>, or
// <server>:<uri> for an MCP resource named by its URI (file:///x,
// ui://widget/y, globs such as file:///docs/*). A name that is a valid
// <server>:<tool> is read as one, as before URIs were allowed; only a
// name a tool cannot have (its leaf holds '/') is read as a URI. A name
// whose leaf is a URI is one only internal/validate lets definitions of
// kinds [resource] store (ResourceURI).
func mcpToolName(field, raw string) (string, *NameError) {
	name, fe := toolName(field, raw)
	if fe == nil {
		return name, nil
	}
	s := strings.TrimSpace(raw)
	server, uri, ok := splitResourceURI(s)
	if !ok {
		return "", fe
	}
	if strings.TrimFunc(server, isSpaceOrSlash) == "" {
		return "", nameError(field, "must be <server>:<uri> with a server before the resource URI (got %q)", s)
	}
	if strings.ContainsRune(uri, '|') {
		// Counter keys are '|'-separated, and a URI writes '|' as %7C.
		return "", nameError(field, "the resource URI %q must not contain '|' (write it %%7C)", uri)
	}
	p, fe := ServerName(field, server)
	if fe != nil {
		return "", fe
	}
	full := p + ":" + uri
	return full, NameProblem(field, full)
}

// SplitToolName splits a normalized mcp_tool or a2a_skill name into its
// parent (the server or agent) and its leaf (the tool, skill or resource
// URI), by the rule the names were normalized by: at the last ':' when
// the leaf is a tool or skill (which holds no ':' or '/'), else before the
// resource URI's scheme (srv:file:///docs/x is server srv). A name with
// neither shape is all parent.
func SplitToolName(name string) (parent, leaf string) {
	if i := strings.LastIndexByte(name, ':'); i >= 0 && !strings.ContainsRune(name[i+1:], '/') {
		return name[:i], name[i+1:]
	}
	if server, uri, ok := splitResourceURI(name); ok {
		return server, uri
	}
	return name, ""
}

// toolName is the <server>:<tool> rule of mcp_tool names.
var toolName = leafName(ServerName, "<server>:<tool>", "tool")

// splitResourceURI splits <server>:<scheme>://<rest> at the ':' before the
// URI's scheme (RFC 3986: a letter, then letters, digits, '+', '-', '.'):
// the first "://" of the name ends the scheme, so a server may hold ':'
// (peer:8080:file:///x is the server peer:8080). ok is false when the
// name has no such URI.
func splitResourceURI(s string) (server, uri string, ok bool) {
	i := strings.Index(s, "://")
	if i < 0 {
		return "", "", false
	}
	j := i
	for j > 0 && isSchemeChar(s[j-1]) {
		j--
	}
	if j == i || j == 0 || s[j-1] != ':' || !isASCIILetter(s[j]) {
		return "", "", false
	}
	return s[:j-1], s[j:], true
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isSchemeChar(c byte) bool {
	return isASCIILetter(c) || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'
}

// ResourceURI reports the resource URI of a normalized mcp_tool name that
// names a resource by URI (github:file:///x: file:///x); ok is false for a
// <server>:<tool> name.
func ResourceURI(name string) (uri string, ok bool) {
	if _, fe := toolName("name", name); fe == nil {
		return "", false
	}
	_, uri, ok = splitResourceURI(name)
	return uri, ok
}
