package statediff

import (
	"fmt"
	"slices"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Quarantine is incident state: a declarative apply leaves it alone unless
// asked (POST /api/apply?quarantine=true, rlctl apply --quarantine), so that
// CI applying a file written before an incident never releases the subject
// quarantined during it, and one written during it never quarantines again a
// subject released since.
//
// Leaving it alone means: a desired membership that names no quarantine
// group keeps the server's quarantine groups and metadata; one that names a
// quarantine group must match the server's quarantine exactly, or the apply
// is refused (QuarantineChangeError); --prune never removes a quarantine.

// QuarantineChangeError says that a desired membership would change
// quarantine while the apply leaves it alone.
type QuarantineChangeError struct {
	ID     string
	Detail string
}

func (e *QuarantineChangeError) Error() string {
	return fmt.Sprintf("%s: %s; quarantine is incident state, which apply changes only when asked "+
		"(rlctl apply --quarantine, ?quarantine=true): use rlctl quarantine add/remove, or leave the quarantine groups out of the file", e.ID, e.Detail)
}

// IsQuarantineGroup reports whether g is one of the two quarantine groups.
func IsQuarantineGroup(g string) bool {
	return g == ratelimit.GroupQuarantineCallers || g == ratelimit.GroupQuarantineTargets
}

// splitGroups parts groups into the quarantine groups and the others, in
// their order.
func splitGroups(groups []string) (quarantine, other []string) {
	for _, g := range groups {
		if IsQuarantineGroup(g) {
			quarantine = append(quarantine, g)
		} else {
			other = append(other, g)
		}
	}
	return quarantine, other
}

// LeaveQuarantine is the desired membership m made to leave quarantine as
// it is on the server (old, nil when the subject has no membership): m's
// groups plus old's quarantine groups, with old's quarantine metadata. It
// refuses, with a *QuarantineChangeError, an m that names quarantine groups
// other than old's or quarantine metadata other than old's.
func LeaveQuarantine(m ratelimit.Membership, old *ratelimit.Membership) (ratelimit.Membership, error) {
	wantQ, other := splitGroups(m.Groups)
	var haveQ []string
	if old != nil {
		haveQ, _ = splitGroups(old.Groups)
	}
	id := m.Key()
	if len(wantQ) == 0 {
		m.Groups = append(slices.Clone(other), haveQ...)
		m.QuarantineReason, m.QuarantinedAt, m.QuarantineExpiresAt = "", nil, nil
		if len(haveQ) > 0 {
			m.QuarantineReason, m.QuarantinedAt, m.QuarantineExpiresAt = old.QuarantineReason, old.QuarantinedAt, old.QuarantineExpiresAt
		}
		return m, nil
	}
	switch {
	case len(haveQ) == 0:
		return m, &QuarantineChangeError{ID: id, Detail: fmt.Sprintf("the file puts it in %s, and it is not quarantined", wantQ[0])}
	case !sameSet(wantQ, haveQ):
		return m, &QuarantineChangeError{ID: id, Detail: fmt.Sprintf("the file names quarantine groups %v, the server %v", wantQ, haveQ)}
	case m.QuarantineReason != "" && m.QuarantineReason != old.QuarantineReason:
		return m, &QuarantineChangeError{ID: id, Detail: fmt.Sprintf("the file gives quarantine_reason %q, the server %q", m.QuarantineReason, old.QuarantineReason)}
	case m.QuarantineExpiresAt != nil && !equalTime(toMicros(m.QuarantineExpiresAt), toMicros(old.QuarantineExpiresAt)):
		return m, &QuarantineChangeError{ID: id, Detail: "the file gives another quarantine_expires_at than the server"}
	}
	m.QuarantineReason, m.QuarantinedAt, m.QuarantineExpiresAt = old.QuarantineReason, old.QuarantinedAt, old.QuarantineExpiresAt
	return m, nil
}

// PruneLeavingQuarantine is what a pruning apply that leaves quarantine
// alone does with a stored membership the file does not name: nil to delete
// it; itself when it holds only quarantine groups (kept as it is); or a copy
// holding only its quarantine groups (its other groups pruned).
func PruneLeavingQuarantine(old ratelimit.Membership) *ratelimit.Membership {
	q, other := splitGroups(old.Groups)
	switch {
	case len(q) == 0:
		return nil
	case len(other) == 0:
		return &old
	}
	m := old
	m.Groups = q
	return &m
}

func sameSet(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Line is one line of an apply's report: "membership/user:bob created",
// "quarantine/user:mallory added".
type Line struct {
	Action       string // create, update, delete; for quarantine: add, remove, update
	ResourceType string // membership or quarantine
	Fields       []Change
}

// Actions of quarantine lines.
const (
	ActionQuarantineAdd    = "add"
	ActionQuarantineRemove = "remove"
)

// MembershipLines words the write of one membership, from old to m (either
// nil: created, deleted), as the report shows it: the membership's own
// groups as membership/<id> (created when it gets its first group that is
// not a quarantine group, deleted when it loses its last), and quarantine
// as quarantine/<id> (added, removed, or configured when its reason or
// expiry changes), so that an incident action is never reported as a
// membership created or configured. Nothing when nothing changes.
func MembershipLines(old, m *ratelimit.Membership) []Line {
	var oldQ, oldOther, newQ, newOther []string
	var empty ratelimit.Membership
	before, after := &empty, &empty
	if old != nil {
		oldQ, oldOther = splitGroups(old.Groups)
		before = old
	}
	if m != nil {
		newQ, newOther = splitGroups(m.Groups)
		after = m
	}
	var lines []Line
	switch {
	case len(oldOther) == 0 && len(newOther) > 0:
		lines = append(lines, Line{Action: "create", ResourceType: "membership"})
	case len(oldOther) > 0 && len(newOther) == 0:
		lines = append(lines, Line{Action: "delete", ResourceType: "membership"})
	case !slices.Equal(oldOther, newOther):
		lines = append(lines, Line{Action: "update", ResourceType: "membership",
			Fields: []Change{{Field: "groups", From: listValue(oldOther), To: listValue(newOther)}}})
	}
	switch {
	case len(oldQ) == 0 && len(newQ) > 0:
		lines = append(lines, Line{Action: ActionQuarantineAdd, ResourceType: "quarantine"})
	case len(oldQ) > 0 && len(newQ) == 0:
		lines = append(lines, Line{Action: ActionQuarantineRemove, ResourceType: "quarantine"})
	case len(oldQ) > 0:
		var c changes
		c.add("groups", listValue(oldQ), listValue(newQ), slices.Equal(oldQ, newQ))
		c.add("quarantine_expires_at", timeValue(before.QuarantineExpiresAt), timeValue(after.QuarantineExpiresAt), equalTime(before.QuarantineExpiresAt, after.QuarantineExpiresAt))
		c.add("quarantine_reason", textValue(before.QuarantineReason), textValue(after.QuarantineReason), before.QuarantineReason == after.QuarantineReason)
		c.add("quarantined_at", timeValue(before.QuarantinedAt), timeValue(after.QuarantinedAt), equalTime(before.QuarantinedAt, after.QuarantinedAt))
		if len(c) > 0 {
			lines = append(lines, Line{Action: "update", ResourceType: "quarantine", Fields: c})
		}
	}
	return lines
}
