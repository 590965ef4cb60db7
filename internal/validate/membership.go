package validate

import (
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Membership checks m and returns its normalized copy: subject normalized for
// its type, groups trimmed and de-duplicated in first-seen order, quarantine
// reason trimmed, and ID set from the result. The quarantine times are passed
// through unchanged. On failure it returns an *Error listing every field at
// fault.
func Membership(m ratelimit.Membership) (ratelimit.Membership, error) {
	out, probs := membershipSubject(m)
	out.Groups = groups(&probs, m.SubjectType, m.Groups)

	var fe *FieldError
	out.QuarantineReason, fe = text("quarantine_reason", m.QuarantineReason, false)
	probs.add(fe)

	if err := probs.err(); err != nil {
		return ratelimit.Membership{}, err
	}
	out.ID = out.Key()
	return out, nil
}

// NoGroups checks a membership that names no groups ("groups": []), which
// is no membership (a subject in no group is one without a membership): its
// subject only, since there is nothing else to keep. It returns the
// normalized copy, ID set.
func NoGroups(m ratelimit.Membership) (ratelimit.Membership, error) {
	out, probs := membershipSubject(m)
	if len(m.Groups) > 0 {
		probs.add(fieldError("groups", "must be empty here (got %d groups)", len(m.Groups)))
	}
	if err := probs.err(); err != nil {
		return ratelimit.Membership{}, err
	}
	out.ID = out.Key()
	return out, nil
}

// membershipSubject normalizes a membership's subject for its type.
func membershipSubject(m ratelimit.Membership) (ratelimit.Membership, problems) {
	out := m
	var probs problems
	var fe *FieldError
	out.Subject, fe = normalizeSubject(m.SubjectType, m.Subject)
	if fe == nil {
		fe = spaceProblem("subject", out.Subject)
	}
	probs.add(fe)
	return out, probs
}

// groups checks a membership's group list. Only users and clients make calls,
// so only they can be in caller groups; servers and agents are targets, and
// the one group that means anything for a target is quarantine-targets.
func groups(probs *problems, subjectType string, raw []string) []string {
	if len(raw) == 0 {
		probs.add(fieldError("groups", "must name at least one group; delete the membership instead"))
		return nil
	}
	return distinct(probs, "groups", raw, func(field, g string) (string, *FieldError) {
		name, fe := groupName(field, g)
		if fe == nil {
			fe = groupForSubjectType(field, subjectType, name)
		}
		return name, fe
	})
}

func groupForSubjectType(field, subjectType, group string) *FieldError {
	switch subjectType {
	case ratelimit.SubjectServer, ratelimit.SubjectAgent:
		if group != ratelimit.GroupQuarantineTargets {
			return fieldError(field, "%s subjects can only be in %s; rate-limit groups hold callers (users and clients) (got %q)",
				subjectType, ratelimit.GroupQuarantineTargets, group)
		}
	case ratelimit.SubjectUser, ratelimit.SubjectClient, ratelimit.SubjectNetwork, ratelimit.SubjectTeam:
		if group == ratelimit.GroupQuarantineTargets {
			return fieldError(field, "%s holds servers and agents; use %s to quarantine a %s",
				ratelimit.GroupQuarantineTargets, ratelimit.GroupQuarantineCallers, subjectType)
		}
	}
	return nil
}

// MembershipID checks a membership (or admin) id and returns its canonical
// form, with the subject normalized as Membership would store it.
func MembershipID(id string) (string, error) {
	subjectType, subject, err := ratelimit.ParseMembershipID(id)
	if err != nil {
		return single("", fieldError("id", "%v", err))
	}
	subject, fe := normalizeSubject(subjectType, subject)
	if fe != nil {
		return single("", fe)
	}
	return ratelimit.MembershipID(subjectType, subject), nil
}

// Admin checks a and returns its normalized copy (subject and note trimmed).
// Admins bypass caller limits, so only callers (users and clients) can be
// admins.
func Admin(a ratelimit.Admin) (ratelimit.Admin, error) {
	out := a
	var probs problems
	fe := check("subject_type", a.SubjectType, adminSubjectTypeRule)
	if fe == nil {
		out.Subject, fe = normalizeSubject(a.SubjectType, a.Subject)
	}
	if fe == nil {
		fe = spaceProblem("subject", out.Subject)
	}
	probs.add(fe)
	out.Note, fe = text("note", a.Note, true)
	probs.add(fe)
	if err := probs.err(); err != nil {
		return ratelimit.Admin{}, err
	}
	return out, nil
}
