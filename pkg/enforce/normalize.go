package enforce

import (
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// normalizeTargetName is the target-name rule Call.Normalize applies: the
// one definitions and memberships name targets by (pkg/ratelimit's, which
// internal/validate calls too). It returns the canonical name, or why name
// is not one (without a field name: "must not be empty").
func normalizeTargetName(targetType, name string) (canonical, problem string) {
	canonical, _, err := ratelimit.NormalizeTargetName(targetType, name)
	if err != nil {
		return "", strings.TrimPrefix(err.Error(), "name: ")
	}
	return canonical, ""
}
