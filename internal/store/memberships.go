package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const membershipColumns = `subject_type, subject, groups, quarantine_reason, quarantined_at,
	quarantine_expires_at, version, created_at, updated_at`

func scanMembership(row pgx.Row) (ratelimit.Membership, error) {
	var m ratelimit.Membership
	err := row.Scan(&m.SubjectType, &m.Subject, &m.Groups, &m.QuarantineReason, &m.QuarantinedAt,
		&m.QuarantineExpiresAt, &m.Version, &m.CreatedAt, &m.UpdatedAt)
	m.ID = m.Key()
	return m, err
}

// GetMembership reads the membership of one subject.
func (q *Queries) GetMembership(ctx context.Context, subjectType, subject string) (ratelimit.Membership, error) {
	m, err := scanMembership(q.db.QueryRow(ctx, `select `+membershipColumns+`
		from rl_memberships where subject_type = $1 and subject = $2`, subjectType, subject))
	if err != nil {
		return m, fmt.Errorf("get membership %q: %w", ratelimit.MembershipID(subjectType, subject), interpretError(err))
	}
	return m, nil
}

// MembershipFilter narrows ListMemberships. Empty fields match everything.
type MembershipFilter struct {
	Group       string
	SubjectType string
	// After is the paging cursor: a membership id; only later ones.
	After string
	Limit int
}

// EachMembership streams the memberships matching f, ordered by id.
func (q *Queries) EachMembership(ctx context.Context, f MembershipFilter, fn func(ratelimit.Membership) error) error {
	var (
		where []string
		args  []any
	)
	if f.Group != "" {
		args = append(args, f.Group)
		where = append(where, fmt.Sprintf("groups @> array[$%d::text]", len(args)))
	}
	if f.SubjectType != "" {
		args = append(args, f.SubjectType)
		where = append(where, fmt.Sprintf("subject_type = $%d", len(args)))
	}
	if f.After != "" {
		typ, subj, _ := strings.Cut(f.After, ":")
		args = append(args, typ, subj)
		where = append(where, fmt.Sprintf("(subject_type, subject) > ($%d, $%d)", len(args)-1, len(args)))
	}
	sql := `select ` + membershipColumns + ` from rl_memberships`
	if len(where) > 0 {
		sql += ` where ` + strings.Join(where, " and ")
	}
	sql += ` order by subject_type, subject`
	if f.Limit > 0 {
		sql += fmt.Sprintf(` limit %d`, f.Limit)
	}
	rows, err := q.db.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("list memberships: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMembership(rows)
		if err != nil {
			return fmt.Errorf("list memberships: %w", interpretError(err))
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list memberships: %w", interpretError(err))
	}
	return nil
}

// ListMemberships returns the memberships matching f.
func (q *Queries) ListMemberships(ctx context.Context, f MembershipFilter) ([]ratelimit.Membership, error) {
	var out []ratelimit.Membership
	err := q.EachMembership(ctx, f, func(m ratelimit.Membership) error {
		out = append(out, m)
		return nil
	})
	return out, err
}

// LockSubject serializes every write about one subject (its membership,
// its quarantine, its admin grant) until the transaction ends. Checks that
// span two tables, such as "never quarantine an admin", take it first.
func (q *Queries) LockSubject(ctx context.Context, subjectType, subject string) error {
	return q.lock(ctx, "subject", ratelimit.MembershipID(subjectType, subject))
}

// PutMembership creates or replaces m (validated and normalized), including
// its quarantine fields. Run it inside a transaction.
func (q *Queries) PutMembership(ctx context.Context, m ratelimit.Membership, w Write) (res PutResult[ratelimit.Membership], err error) {
	id := m.Key()
	if err := q.LockSubject(ctx, m.SubjectType, m.Subject); err != nil {
		return res, fmt.Errorf("put membership %q: %w", id, err)
	}
	if old, err := q.GetMembership(ctx, m.SubjectType, m.Subject); err == nil {
		res.Before = &old
	} else if !isNotFound(err) {
		return res, err
	}
	var have int64
	if res.Before != nil {
		have = res.Before.Version
	}
	if err := checkVersion(w.IfVersion, res.Before != nil, have); err != nil {
		return res, fmt.Errorf("put membership %q: %w", id, err)
	}
	if res.Before != nil && sameMembership(*res.Before, m) {
		res.After, res.Unchanged = *res.Before, true
		return res, nil
	}
	res.After, err = scanMembership(q.db.QueryRow(ctx, `
		insert into rl_memberships (subject_type, subject, groups, quarantine_reason, quarantined_at, quarantine_expires_at)
		values ($1, $2, $3, $4, $5, $6)
		on conflict (subject_type, subject) do update set
			groups = excluded.groups,
			quarantine_reason = excluded.quarantine_reason,
			quarantined_at = excluded.quarantined_at,
			quarantine_expires_at = excluded.quarantine_expires_at,
			updated_at = now(),
			version = rl_memberships.version + 1
		returning `+membershipColumns,
		m.SubjectType, m.Subject, m.Groups, m.QuarantineReason, m.QuarantinedAt, m.QuarantineExpiresAt))
	if err != nil {
		return res, fmt.Errorf("put membership %q: %w", id, interpretError(err))
	}
	return res, nil
}

// sameMembership compares the fields a PUT can change.
func sameMembership(a, b ratelimit.Membership) bool {
	return slices.Equal(a.Groups, b.Groups) && a.QuarantineReason == b.QuarantineReason &&
		equalTime(a.QuarantinedAt, b.QuarantinedAt) && equalTime(a.QuarantineExpiresAt, b.QuarantineExpiresAt)
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// DeleteMembership removes a subject's membership and returns what it removed.
func (q *Queries) DeleteMembership(ctx context.Context, subjectType, subject string, w Write) (ratelimit.Membership, error) {
	if err := q.LockSubject(ctx, subjectType, subject); err != nil {
		return ratelimit.Membership{}, err
	}
	before, err := q.GetMembership(ctx, subjectType, subject)
	if err != nil {
		return before, err
	}
	if err := checkVersion(w.IfVersion, true, before.Version); err != nil {
		return before, fmt.Errorf("delete membership %q: %w", before.ID, err)
	}
	if _, err := q.db.Exec(ctx, `delete from rl_memberships where subject_type = $1 and subject = $2`,
		subjectType, subject); err != nil {
		return before, fmt.Errorf("delete membership %q: %w", before.ID, interpretError(err))
	}
	return before, nil
}

// EachMembershipByID streams the memberships among ids
// (<subject_type>:<subject>) that exist, ordered by id: what an
// incremental reload reads after a change notification. An id it does not
// return was deleted.
func (q *Queries) EachMembershipByID(ctx context.Context, ids []string, fn func(ratelimit.Membership) error) error {
	types, subjects, err := splitSubjectIDs(ids)
	if err != nil {
		return fmt.Errorf("read %d memberships: %w", len(ids), err)
	}
	rows, err := q.db.Query(ctx, `select `+membershipColumns+` from rl_memberships
		where (subject_type, subject) in (select * from unnest($1::text[], $2::text[]))
		order by subject_type, subject`, types, subjects)
	if err != nil {
		return fmt.Errorf("read %d memberships: %w", len(ids), interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMembership(rows)
		if err != nil {
			return fmt.Errorf("read %d memberships: %w", len(ids), interpretError(err))
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %d memberships: %w", len(ids), interpretError(err))
	}
	return nil
}
