package cmdutil

import (
	"strconv"
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// LimitText renders a definition's limits: "500" for targets,
// "user=60 agent=30" for groups, "-" for the quarantine sentinels. The
// definition commands and the dashboard both show it.
func LimitText(d ratelimit.Definition) string {
	var parts []string
	if d.MaxRequests != nil {
		parts = append(parts, strconv.Itoa(*d.MaxRequests))
	}
	if d.UserMaxRequests != nil {
		parts = append(parts, "user="+strconv.Itoa(*d.UserMaxRequests))
	}
	if d.AgentMaxRequests != nil {
		parts = append(parts, "agent="+strconv.Itoa(*d.AgentMaxRequests))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
