// Package ratelimitcmd holds the rate-limit definition commands: set, list,
// get, delete, enable, disable and status, each under `rlctl rate-limit`
// and under the reference CLI's flat name (rate-limit-set, ...).
package ratelimitcmd

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/rlctl/rlctl/internal/cli/cmdutil"
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
	{Header: "LIMIT", Value: limitText},
	{Header: "ALGORITHM", Wide: true, Value: func(d ratelimit.Definition) string { return d.AlgorithmOrDefault() }},
	{Header: "BURST", Wide: true, Value: cmdutil.BurstText},
	{Header: "MODE", Value: func(d ratelimit.Definition) string { return d.Mode }},
	{Header: "ENABLED", Value: func(d ratelimit.Definition) string { return strconv.FormatBool(d.Enabled) }},
	{Header: "FAIL-CLOSED", Wide: true, Value: func(d ratelimit.Definition) string { return strconv.FormatBool(d.FailClosed) }},
	// Shown when some definition has a fail policy of its own (none: the
	// enforcer's default, rlapi --fail-policy).
	{Header: "FAIL-POLICY", Wide: true, Optional: true, Value: func(d ratelimit.Definition) string { return d.FailPolicy }},
	{Header: "MEMBERS", Wide: true, Value: func(d ratelimit.Definition) string { return strings.Join(d.Members, ",") }},
	{Header: "MATCH", Wide: true, Optional: true, Value: cmdutil.MatchText},
	// Shown when some definition says lease never or always.
	{Header: "LEASE", Wide: true, Optional: true, Value: func(d ratelimit.Definition) string { return d.Lease }},
	// Whether its throttles count toward an escalation lockout, set or
	// by its buckets.
	{Header: "LOCKOUT", Wide: true, Value: func(d ratelimit.Definition) string { return cmp.Or(d.Lockout(), "-") }},
	{Header: "VERSION", Wide: true, Value: func(d ratelimit.Definition) string { return strconv.FormatInt(d.Version, 10) }},
	{Header: "UPDATED-BY", Wide: true, Value: func(d ratelimit.Definition) string { return d.UpdatedBy }},
	{Header: "DESCRIPTION", Wide: true, Value: func(d ratelimit.Definition) string { return d.Description }},
}

func idOf(d ratelimit.Definition) string { return d.ID }

// limitText is the LIMIT column: the limits, and for an algorithm other
// than the fixed window its name and bursts, so the narrow table says how
// a limit counts without changing for the definitions that count as
// before (scripts read its columns).
//
// A definition for everyone or with buckets not per caller says so too
// ("(everyone, per ip)"), and an override ("(override)"): who shares a
// bucket, and whose limit it keeps, is part of what a limit means.
func limitText(d ratelimit.Definition) string {
	text := cmdutil.LimitText(d)
	switch a := d.AlgorithmOrDefault(); a {
	case ratelimit.AlgorithmFixedWindow:
	case ratelimit.AlgorithmTokenBucket:
		text += " (" + a + ", burst " + cmdutil.BurstText(d) + ")"
	default:
		text += " (" + a + ")"
	}
	if sel := cmdutil.SelectorText(d); sel != "" {
		text += " (" + sel + ")"
	}
	// An override changes which limit a caller gets: said beside it.
	if d.Override {
		text += " (override)"
	}
	return text
}
