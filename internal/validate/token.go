package validate

import "strings"

// maxTokenNameBytes keeps token names short enough to show in audit columns.
const maxTokenNameBytes = 64

// TokenName checks an API token's name and returns it trimmed. The name is
// recorded as the actor of every change the token makes, so it is kept to a
// charset that reads unambiguously in audit output; '@' admits names such as
// ci@build.
func TokenName(name string) (string, error) {
	s := strings.TrimSpace(name)
	switch {
	case s == "":
		return single("", fieldError("name", "must not be empty"))
	case len(s) > maxTokenNameBytes:
		return single("", fieldError("name", "must be at most %d bytes (got %d)", maxTokenNameBytes, len(s)))
	case strings.ContainsFunc(s, isNotTokenNameChar):
		return single("", fieldError("name", "must contain only ASCII letters, digits, '.', '_', '-' and '@' (got %q)", s))
	case !isAlnum(s[0]):
		// Names travel in URL paths, where "." and ".." are cleaned away.
		return single("", fieldError("name", "must start with a letter or digit (got %q)", s))
	}
	return s, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isNotTokenNameChar(r rune) bool {
	return r != '@' && isNotGroupNameChar(r)
}

// Role checks an API token role.
func Role(role string) error {
	var probs problems
	probs.add(check("role", role, roleRule))
	return probs.err()
}
