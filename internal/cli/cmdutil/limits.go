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
	if d.Unlimited {
		return "unlimited" // a descriptor definition that never limits
	}
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
	if d.IPMaxRequests != nil {
		parts = append(parts, "ip="+strconv.Itoa(*d.IPMaxRequests))
	}
	if d.TeamMaxRequests != nil {
		parts = append(parts, "team="+strconv.Itoa(*d.TeamMaxRequests))
	}
	if len(parts) == 0 {
		if d.Exempt {
			return "exempt"
		}
		return "-"
	}
	return strings.Join(parts, " ")
}

// MatchText renders what a route or tool definition selects beyond its
// name: a route's methods and paths ("POST /auth/*,/sso/*"), a tool's
// kinds and scope ("kinds=tool,prompt per=principal_tool"); "" otherwise.
// The definition tables and the dashboard both show it.
func MatchText(d ratelimit.Definition) string {
	var parts []string
	if len(d.Methods) > 0 {
		parts = append(parts, strings.Join(d.Methods, ","))
	}
	if len(d.Paths) > 0 {
		parts = append(parts, strings.Join(d.Paths, ","))
	}
	if len(d.Kinds) > 0 {
		parts = append(parts, "kinds="+strings.Join(d.Kinds, ","))
	}
	if d.ToolScope != "" {
		parts = append(parts, "per="+d.ToolScope)
	}
	return strings.Join(parts, " ")
}

// BurstText renders a token bucket's capacities like LimitText its limits,
// each defaulting to its limit ("50", "user=200 agent=10"); "-" for the
// windows, which have none.
func BurstText(d ratelimit.Definition) string {
	if d.AlgorithmOrDefault() != ratelimit.AlgorithmTokenBucket {
		return "-"
	}
	or := func(burst, limit *int) *int {
		if burst != nil {
			return burst
		}
		return limit
	}
	return LimitText(ratelimit.Definition{MaxRequests: or(d.Burst, d.MaxRequests),
		UserMaxRequests: or(d.UserBurst, d.UserMaxRequests), AgentMaxRequests: or(d.AgentBurst, d.AgentMaxRequests),
		IPMaxRequests: or(d.IPBurst, d.IPMaxRequests), TeamMaxRequests: or(d.TeamBurst, d.TeamMaxRequests)})
}

// SelectorText says whom a caller definition selects beyond its group's
// members and what its buckets count: "everyone", "per ip", "everyone,
// per team"; empty for a definition of members with a bucket per caller.
func SelectorText(d ratelimit.Definition) string {
	var parts []string
	if d.Everyone {
		parts = append(parts, "everyone")
	}
	if p := d.PerOrDefault(); p != ratelimit.PerCaller {
		parts = append(parts, "per "+p)
	}
	return strings.Join(parts, ", ")
}
