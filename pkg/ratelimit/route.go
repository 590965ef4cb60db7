package ratelimit

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules on route patterns and methods live here, beside the name
// rules, so that internal/validate stores a pattern exactly in the form
// pkg/enforce matches it against.

// Methods lists the HTTP methods a route definition may name.
func Methods() []string {
	return []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}
}

// RouteMethod returns the canonical (upper-case) form of an HTTP method,
// or why it is not one.
func RouteMethod(field, raw string) (string, *NameError) {
	m := strings.ToUpper(strings.TrimSpace(raw))
	if !slices.Contains(Methods(), m) {
		return "", nameError(field, "must be one of %s (got %q)", strings.Join(Methods(), ", "), raw)
	}
	return m, nil
}

// RoutePatternRule is the rule on route patterns, stated where messages
// can cite it.
const RoutePatternRule = "a route pattern is a path as the gateway normalizes it: it starts with '/', " +
	"has no empty, '.' or '..' segment, no trailing '/', no query ('?', '#'), no '%', '\\\\' or ';', " +
	"no whitespace; '*' matches any run of characters, '/' included"

// RoutePattern returns the canonical form of a route pattern (lower-case,
// runs of '*' as one), or why it can never match a path. A gateway
// normalizes every request path before matching (enforce.RoutePath:
// decoded once, lower-cased, parameters, empty and dot segments dropped),
// so a pattern holding what a normalized path never holds would be a limit
// that never applies: it is refused instead, naming field.
func RoutePattern(field, raw string) (string, *NameError) {
	s := strings.TrimSpace(raw)
	switch {
	case s == "":
		return "", nameError(field, "must not be empty")
	case !utf8.ValidString(s):
		return "", nameError(field, "must be valid UTF-8 (got %q)", s)
	case len(s) > MaxNameBytes:
		return "", nameError(field, "must be at most %d bytes (got %d)", MaxNameBytes, len(s))
	case !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "*"):
		return "", nameError(field, "must start with '/' (got %q): %s", s, RoutePatternRule)
	}
	if i := strings.IndexFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("?#%\\;", r)
	}); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return "", nameError(field, "can never match: %q holds %q, which a normalized path never holds (%s)", s, r, RoutePatternRule)
	}
	for strings.Contains(s, "**") {
		s = strings.ReplaceAll(s, "**", "*")
	}
	s = strings.ToLower(s)
	if s != "/" && s != "*" {
		body := strings.TrimPrefix(s, "/")
		if strings.HasSuffix(body, "/") {
			return "", nameError(field, "can never match: %q ends in '/', which a normalized path never does (write %q, or %q for what is below it)",
				s, strings.TrimSuffix(s, "/"), s+"*")
		}
		for _, seg := range strings.Split(body, "/") {
			switch seg {
			case "":
				return "", nameError(field, "can never match: %q has an empty segment ('//'), which a normalized path never has", s)
			case ".", "..":
				return "", nameError(field, "can never match: %q has a %q segment, which a normalized path never has", s, seg)
			}
		}
	}
	return s, nil
}

// GlobMatch reports whether name matches pattern, where '*' matches any
// run of characters (the empty one too) and every other byte matches
// itself. It runs in time linear in len(pattern)+len(name) times the
// number of '*' at most, never backtracking exponentially.
func GlobMatch(pattern, name string) bool {
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// IsGlob reports whether a pattern holds a '*'.
func IsGlob(pattern string) bool { return strings.IndexByte(pattern, '*') >= 0 }
