package enforce

import "github.com/rlctl/rlctl/internal/validate"

// normalizeTargetName is the target-name rule Call.Normalize applies: the
// one definitions and memberships name targets by. It is the only use of
// internal/validate in Call's validation, kept in this file so that it
// can be pointed at pkg/ratelimit's rule in one line.
func normalizeTargetName(targetType, name string) (string, error) {
	return validate.TargetName(targetType, name)
}
