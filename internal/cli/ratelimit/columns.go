// Package ratelimit holds the rate-limit definition commands: set, list,
// get, delete, enable, disable and status, each under `rlctl rate-limit`
// and under the reference CLI's flat name (rate-limit-set, ...).
package ratelimit

import (
	"strconv"
	"strings"

	"github.com/rlctl/rlctl/internal/cli/printer"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Columns of a definition table.
var Columns = []printer.Column[ratelimit.Definition]{
	{Header: "ID", Value: func(d ratelimit.Definition) string { return d.ID }},
	{Header: "AXIS", Value: func(d ratelimit.Definition) string { return d.Axis }},
	{Header: "ENTITY", Value: func(d ratelimit.Definition) string { return d.EntityType }},
	{Header: "NAME", Value: func(d ratelimit.Definition) string { return d.Name }},
	{Header: "WINDOW", Value: func(d ratelimit.Definition) string { return strconv.Itoa(d.WindowSeconds) + "s" }},
	{Header: "LIMIT", Value: LimitText},
	{Header: "MODE", Value: func(d ratelimit.Definition) string { return d.Mode }},
	{Header: "ENABLED", Value: func(d ratelimit.Definition) string { return strconv.FormatBool(d.Enabled) }},
	{Header: "FAIL-CLOSED", Wide: true, Value: func(d ratelimit.Definition) string { return strconv.FormatBool(d.FailClosed) }},
	{Header: "MEMBERS", Wide: true, Value: func(d ratelimit.Definition) string { return strings.Join(d.Members, ",") }},
	{Header: "VERSION", Wide: true, Value: func(d ratelimit.Definition) string { return strconv.FormatInt(d.Version, 10) }},
	{Header: "UPDATED-BY", Wide: true, Value: func(d ratelimit.Definition) string { return d.UpdatedBy }},
	{Header: "DESCRIPTION", Wide: true, Value: func(d ratelimit.Definition) string { return d.Description }},
}

// LimitText renders a definition's limits: "500" for targets,
// "user=60 agent=30" for groups, "-" for the quarantine sentinels.
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

func idOf(d ratelimit.Definition) string { return d.ID }
