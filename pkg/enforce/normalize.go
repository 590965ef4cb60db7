package enforce

import (
	"strings"

	"github.com/rlctl/rlctl/internal/validate"
)

// normalizeTargetName is the target-name rule Call.Normalize applies: the
// one definitions and memberships name targets by. It returns the
// canonical name, or why name is not one (without a field name: "must not
// be empty"). It is the only use of internal/validate in Call's validation,
// kept in this file so that it can be pointed at pkg/ratelimit's rule in
// one place.
func normalizeTargetName(targetType, name string) (canonical, problem string) {
	canonical, err := validate.TargetName(targetType, name)
	if err != nil {
		return "", strings.TrimPrefix(err.Error(), "name: ")
	}
	return canonical, ""
}
