package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const adminColumns = `subject_type, subject, note, created_at, created_by`

func scanAdmin(row pgx.Row) (ratelimit.Admin, error) {
	var a ratelimit.Admin
	err := row.Scan(&a.SubjectType, &a.Subject, &a.Note, &a.CreatedAt, &a.CreatedBy)
	return a, err
}

// ListAdmins returns every administrator identity, ordered by id.
func (q *Queries) ListAdmins(ctx context.Context) ([]ratelimit.Admin, error) {
	rows, err := q.db.Query(ctx, `select `+adminColumns+` from rl_admins order by subject_type, subject`)
	if err != nil {
		return nil, fmt.Errorf("list admins: %w", interpretError(err))
	}
	admins, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ratelimit.Admin, error) { return scanAdmin(r) })
	if err != nil {
		return nil, fmt.Errorf("list admins: %w", interpretError(err))
	}
	return admins, nil
}

// GetAdmin reads one administrator identity.
func (q *Queries) GetAdmin(ctx context.Context, subjectType, subject string) (ratelimit.Admin, error) {
	a, err := scanAdmin(q.db.QueryRow(ctx, `select `+adminColumns+` from rl_admins
		where subject_type = $1 and subject = $2`, subjectType, subject))
	if err != nil {
		return a, fmt.Errorf("get admin %q: %w", ratelimit.MembershipID(subjectType, subject), interpretError(err))
	}
	return a, nil
}

// IsAdmin reports whether the subject is an administrator. Errors are
// returned, never read as "no": callers that guard quarantine fail closed.
func (q *Queries) IsAdmin(ctx context.Context, subjectType, subject string) (bool, error) {
	var ok bool
	err := q.db.QueryRow(ctx, `select exists (select 1 from rl_admins where subject_type = $1 and subject = $2)`,
		subjectType, subject).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check admin %q: %w", ratelimit.MembershipID(subjectType, subject), interpretError(err))
	}
	return ok, nil
}

// PutAdmin grants (or re-notes) administrator privileges and returns the
// stored row and the one it replaced. Run it in a transaction after
// LockSubject, having checked the subject is not quarantined.
func (q *Queries) PutAdmin(ctx context.Context, a ratelimit.Admin, actor string) (after ratelimit.Admin, before *ratelimit.Admin, err error) {
	if old, err := q.GetAdmin(ctx, a.SubjectType, a.Subject); err == nil {
		before = &old
	} else if !isNotFound(err) {
		return after, nil, err
	}
	after, err = scanAdmin(q.db.QueryRow(ctx, `
		insert into rl_admins (subject_type, subject, note, created_by) values ($1, $2, $3, $4)
		on conflict (subject_type, subject) do update set note = excluded.note
		returning `+adminColumns, a.SubjectType, a.Subject, a.Note, actor))
	if err != nil {
		return after, before, fmt.Errorf("put admin %q: %w", a.Key(), interpretError(err))
	}
	return after, before, nil
}

// DeleteAdmin revokes administrator privileges and returns what it removed.
func (q *Queries) DeleteAdmin(ctx context.Context, subjectType, subject string) (ratelimit.Admin, error) {
	a, err := scanAdmin(q.db.QueryRow(ctx, `delete from rl_admins where subject_type = $1 and subject = $2
		returning `+adminColumns, subjectType, subject))
	if err != nil {
		return a, fmt.Errorf("delete admin %q: %w", ratelimit.MembershipID(subjectType, subject), interpretError(err))
	}
	return a, nil
}

// AdminsByID returns the administrators among ids (<subject_type>:<subject>)
// that exist, ordered by id: what an incremental reload reads after a
// change notification.
func (q *Queries) AdminsByID(ctx context.Context, ids []string) ([]ratelimit.Admin, error) {
	types, subjects, err := splitSubjectIDs(ids)
	if err != nil {
		return nil, fmt.Errorf("read %d admins: %w", len(ids), err)
	}
	rows, err := q.db.Query(ctx, `select `+adminColumns+` from rl_admins
		where (subject_type, subject) in (select * from unnest($1::text[], $2::text[]))
		order by subject_type, subject`, types, subjects)
	if err != nil {
		return nil, fmt.Errorf("read %d admins: %w", len(ids), interpretError(err))
	}
	admins, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ratelimit.Admin, error) { return scanAdmin(r) })
	if err != nil {
		return nil, fmt.Errorf("read %d admins: %w", len(ids), interpretError(err))
	}
	return admins, nil
}
