package store

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// LockoutActor is the audit actor of automatic lockouts.
const LockoutActor = "rlctl-lockout"

// Lockout is an escalation lockout: an automatic quarantine of a caller
// (a user, a client, or an anonymous caller's network: its /32 or IPv6
// prefix) until Until, with Reason.
type Lockout struct {
	SubjectType, Subject string
	Until, Now           time.Time
	Reason               string
}

// LockOut quarantines l's caller until l.Until, audited as LockoutActor's
// "lockout", in one transaction. It changes nothing, and reports false,
// for an administrator and for a caller already quarantined at least as
// long (a manual quarantine without expiry included). An expired
// quarantine still holding the group is replaced, as a new one.
func (s *Store) LockOut(ctx context.Context, l Lockout) (applied bool, err error) {
	switch l.SubjectType {
	case ratelimit.SubjectUser, ratelimit.SubjectClient:
	case ratelimit.SubjectNetwork:
		// An anonymous caller's address: its /32 or its IPv6 prefix, in
		// the canonical masked form network subjects are stored in.
		if p, err := netip.ParsePrefix(l.Subject); err != nil || p.Masked().String() != l.Subject {
			return false, fmt.Errorf("lock out %q: a network subject must be a masked CIDR: %w", l.Subject, ErrInvalid)
		}
	default:
		return false, fmt.Errorf("lock out %q: subject type must be user, client or network: %w", l.Subject, ErrInvalid)
	}
	err = s.InTx(ctx, func(q *Queries) error {
		if err := q.LockSubject(ctx, l.SubjectType, l.Subject); err != nil {
			return err
		}
		admin, err := q.IsAdmin(ctx, l.SubjectType, l.Subject)
		if err != nil || admin {
			return err
		}
		m, err := q.GetMembership(ctx, l.SubjectType, l.Subject)
		var prev *ratelimit.Membership
		switch {
		case err == nil:
			prev = &m
		case isNotFound(err):
			m = ratelimit.Membership{SubjectType: l.SubjectType, Subject: l.Subject}
		default:
			return err
		}
		group := ratelimit.GroupQuarantineCallers
		active := m.HasGroup(group) && (m.QuarantineExpiresAt == nil || l.Now.Before(*m.QuarantineExpiresAt))
		if active && (m.QuarantineExpiresAt == nil || !m.QuarantineExpiresAt.Before(l.Until)) {
			return nil // quarantined at least as long already
		}
		next := m
		if !m.HasGroup(group) {
			next.Groups = append(slices.Clone(m.Groups), group)
		}
		until, now := l.Until.UTC().Truncate(time.Microsecond), l.Now.UTC().Truncate(time.Microsecond)
		next.QuarantineReason, next.QuarantineExpiresAt = l.Reason, &until
		if !active || next.QuarantinedAt == nil {
			next.QuarantinedAt = &now
		}
		res, err := q.PutMembership(ctx, next, Write{})
		if err != nil {
			return err
		}
		if res.Unchanged {
			return nil
		}
		applied = true
		return q.InsertAudit(ctx, Audit{Actor: LockoutActor, Action: "lockout", ResourceType: "membership",
			ResourceID: next.Key(), Before: prev, After: res.After})
	})
	if err != nil {
		return false, fmt.Errorf("lock out %q: %w", ratelimit.MembershipID(l.SubjectType, l.Subject), err)
	}
	return applied, nil
}
