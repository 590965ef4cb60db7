// Package statediff holds what the server's declarative apply (POST
// /api/apply) and rlctl's client dry run (rlctl apply --dry-run=client)
// must compute alike: the form in which a desired membership is stored, and
// the fields an update of a definition, membership or admin changes.
//
// The CLI cannot import internal/api, and a client dry run that words a
// change differently from the apply it predicts is worse than none, so both
// sides call this package rather than keeping copies. JSONFields, the
// generic comparison behind the API's per-object dry runs and the CLI's
// change lines, lives here for the same reason.
package statediff

import (
	"slices"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// Change is one field an update changes, by its JSON name. From and To are
// what the resource's JSON shows: an absent field is nil. It is the API's
// field change (dry-run reports, apply results), declared once in pkg/wire.
type Change = wire.Change

// Definition lists what updating old to d changes, in field-name order;
// empty when old already matches d.
func Definition(old, d ratelimit.Definition) []Change {
	var c changes
	c.add("agent_burst", intValue(old.AgentBurst), intValue(d.AgentBurst), equalInt(old.AgentBurst, d.AgentBurst))
	c.add("agent_max_requests", intValue(old.AgentMaxRequests), intValue(d.AgentMaxRequests), equalInt(old.AgentMaxRequests, d.AgentMaxRequests))
	// No algorithm is a fixed window: a file that names none diffs as
	// unchanged against a stored fixed_window definition.
	c.add("algorithm", old.AlgorithmOrDefault(), d.AlgorithmOrDefault(), old.AlgorithmOrDefault() == d.AlgorithmOrDefault())
	c.add("burst", intValue(old.Burst), intValue(d.Burst), equalInt(old.Burst, d.Burst))
	c.add("counts_toward_lockout", flagPtrValue(old.CountsTowardLockout), flagPtrValue(d.CountsTowardLockout),
		(old.CountsTowardLockout == nil) == (d.CountsTowardLockout == nil) && (old.CountsTowardLockout == nil || *old.CountsTowardLockout == *d.CountsTowardLockout))
	c.add("description", textValue(old.Description), textValue(d.Description), old.Description == d.Description)
	c.add("detailed_metric", flagValue(old.DetailedMetric), flagValue(d.DetailedMetric), old.DetailedMetric == d.DetailedMetric)
	c.add("enabled", old.Enabled, d.Enabled, old.Enabled == d.Enabled)
	c.add("everyone", old.Everyone, d.Everyone, old.Everyone == d.Everyone)
	c.add("exempt", old.Exempt, d.Exempt, old.Exempt == d.Exempt)
	c.add("fail_closed", old.FailClosed, d.FailClosed, old.FailClosed == d.FailClosed)
	// No fail policy is the enforcer's default; both sides come validated,
	// so fail_closed alone already reads as closed here.
	c.add("fail_policy", textValue(old.FailPolicy), textValue(d.FailPolicy), old.FailPolicy == d.FailPolicy)
	c.add("ip_burst", intValue(old.IPBurst), intValue(d.IPBurst), equalInt(old.IPBurst, d.IPBurst))
	c.add("ip_max_requests", intValue(old.IPMaxRequests), intValue(d.IPMaxRequests), equalInt(old.IPMaxRequests, d.IPMaxRequests))
	c.add("kinds", listValue(old.Kinds), listValue(d.Kinds), slices.Equal(old.Kinds, d.Kinds))
	// No lease is auto, as no per is per caller.
	c.add("lease", old.LeaseOrDefault(), d.LeaseOrDefault(), old.LeaseOrDefault() == d.LeaseOrDefault())
	c.add("limit_name", textValue(old.LimitName), textValue(d.LimitName), old.LimitName == d.LimitName)
	c.add("max_requests", intValue(old.MaxRequests), intValue(d.MaxRequests), equalInt(old.MaxRequests, d.MaxRequests))
	c.add("members", listValue(old.Members), listValue(d.Members), slices.Equal(old.Members, d.Members))
	c.add("methods", listValue(old.Methods), listValue(d.Methods), slices.Equal(old.Methods, d.Methods))
	c.add("mode", textValue(old.Mode), textValue(d.Mode), old.Mode == d.Mode)
	c.add("override", flagValue(old.Override), flagValue(d.Override), old.Override == d.Override)
	c.add("paths", listValue(old.Paths), listValue(d.Paths), slices.Equal(old.Paths, d.Paths))
	// No per is per caller, as no algorithm is a fixed window.
	c.add("per", old.PerOrDefault(), d.PerOrDefault(), old.PerOrDefault() == d.PerOrDefault())
	c.add("replaces", listValue(old.Replaces), listValue(d.Replaces), slices.Equal(old.Replaces, d.Replaces))
	c.add("share_threshold", flagValue(old.ShareThreshold), flagValue(d.ShareThreshold), old.ShareThreshold == d.ShareThreshold)
	c.add("team_burst", intValue(old.TeamBurst), intValue(d.TeamBurst), equalInt(old.TeamBurst, d.TeamBurst))
	c.add("team_max_requests", intValue(old.TeamMaxRequests), intValue(d.TeamMaxRequests), equalInt(old.TeamMaxRequests, d.TeamMaxRequests))
	c.add("tool_scope", textValue(old.ToolScope), textValue(d.ToolScope), old.ToolScope == d.ToolScope)
	c.add("unlimited", flagValue(old.Unlimited), flagValue(d.Unlimited), old.Unlimited == d.Unlimited)
	c.add("user_burst", intValue(old.UserBurst), intValue(d.UserBurst), equalInt(old.UserBurst, d.UserBurst))
	c.add("user_max_requests", intValue(old.UserMaxRequests), intValue(d.UserMaxRequests), equalInt(old.UserMaxRequests, d.UserMaxRequests))
	c.add("value_to_metric", flagValue(old.ValueToMetric), flagValue(d.ValueToMetric), old.ValueToMetric == d.ValueToMetric)
	return c
}

// flagValue is a descriptor flag as its JSON shows it: absent when false
// (the fields are omitempty).
func flagValue(b bool) any {
	if !b {
		return nil
	}
	return true
}

// Membership is Definition for memberships.
func Membership(old, m ratelimit.Membership) []Change {
	var c changes
	c.add("groups", listValue(old.Groups), listValue(m.Groups), slices.Equal(old.Groups, m.Groups))
	c.add("quarantine_expires_at", timeValue(old.QuarantineExpiresAt), timeValue(m.QuarantineExpiresAt), equalTime(old.QuarantineExpiresAt, m.QuarantineExpiresAt))
	c.add("quarantine_reason", textValue(old.QuarantineReason), textValue(m.QuarantineReason), old.QuarantineReason == m.QuarantineReason)
	c.add("quarantined_at", timeValue(old.QuarantinedAt), timeValue(m.QuarantinedAt), equalTime(old.QuarantinedAt, m.QuarantinedAt))
	return c
}

// Admin is Definition for admins: only the note can change.
func Admin(old, a ratelimit.Admin) []Change {
	var c changes
	c.add("note", textValue(old.Note), textValue(a.Note), old.Note == a.Note)
	return c
}

// WithQuarantineFields keeps quarantine metadata consistent with the
// groups: a membership in a quarantine group has a start time (prev's when
// prev, the stored membership, already has one; else now); one without has
// no metadata.
func WithQuarantineFields(m ratelimit.Membership, prev *ratelimit.Membership, now time.Time) ratelimit.Membership {
	quarantined := m.HasGroup(ratelimit.GroupQuarantineCallers) || m.HasGroup(ratelimit.GroupQuarantineTargets)
	if !quarantined {
		m.QuarantineReason, m.QuarantinedAt, m.QuarantineExpiresAt = "", nil, nil
		return m
	}
	if prev != nil && prev.QuarantinedAt != nil {
		m.QuarantinedAt = prev.QuarantinedAt
	}
	if m.QuarantinedAt == nil {
		t := now.UTC()
		m.QuarantinedAt = &t
	}
	return m
}

// StoredMembership is what an apply stores of the desired membership m
// over prev (nil when there is none): WithQuarantineFields, with its times
// cut to the microseconds the database keeps, so that comparing it with
// prev finds only real changes.
func StoredMembership(m ratelimit.Membership, prev *ratelimit.Membership, now time.Time) ratelimit.Membership {
	m = WithQuarantineFields(m, prev, now)
	m.QuarantinedAt, m.QuarantineExpiresAt = toMicros(m.QuarantinedAt), toMicros(m.QuarantineExpiresAt)
	return m
}

// changes collects the fields that differ.
type changes []Change

func (c *changes) add(field string, from, to any, same bool) {
	if !same {
		*c = append(*c, Change{Field: field, From: from, To: to})
	}
}

func toMicros(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.Truncate(time.Microsecond)
	return &u
}

// flagPtrValue shows an optional flag: unset as none.
func flagPtrValue(v *bool) any {
	if v == nil {
		return nil
	}
	return *v
}

func intValue(v *int) any {
	if v == nil {
		return nil
	}
	return *v
}

func textValue(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func listValue(l []string) any {
	if len(l) == 0 {
		return nil
	}
	return l
}

func timeValue(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

func equalInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
