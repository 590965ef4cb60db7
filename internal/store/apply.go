package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The primitives of declarative apply (POST /api/apply): lock, read every
// row of a kind in one query, and write many rows in one statement or one
// COPY. The API diffs in Go between the reads and the writes; nothing here
// makes a round trip per row, so an apply of 100,000 memberships costs a
// handful of statements.
//
// Each write takes rows that are already validated, normalized and complete
// (times, versions, authors), so the caller knows every after-image without
// reading it back. Run them in one transaction after LockForApply.

// ApplyLockKind is the advisory-lock kind of apply as a whole: an apply
// takes lock(ctx, ApplyLockKind, "") exclusively, so two applies run one
// after the other, and every per-row writer takes the same key in shared
// mode before anything else (see Queries.lock), so a row write and an
// apply never overlap.
const ApplyLockKind = "apply"

// LockForApply takes the locks of an apply, in an order that cannot
// deadlock with the per-row writers (which take the apply key shared and
// one subject or definition lock, then write):
//
//  1. the apply lock (ApplyLockKind), exclusive. Applies serialize, and
//     since every per-row writer (a PUT or DELETE of a definition, a
//     membership, a quarantine or an admin grant) holds the same key in
//     shared mode from before its first read to its commit, the apply
//     waits for every writer in flight and keeps new ones out until it
//     commits. That is what keeps "an administrator is never quarantined"
//     true across an apply and a concurrent quarantine or grant: neither
//     side can read the other's half-done state;
//  2. rl_definitions, rl_memberships and rl_admins in SHARE ROW EXCLUSIVE
//     mode. This also waits for, and keeps out, writers that bypass the
//     API (a hand-written UPDATE), so the bulk reads that follow see every
//     committed row and the diff stays true while it is written.
//
// Neither lock blocks a reader: the advisory key is taken only by writers,
// and SHARE ROW EXCLUSIVE does not conflict with the ACCESS SHARE lock of a
// plain SELECT. Lists, GETs, the status endpoint and the enforcement
// snapshot read the last committed state under MVCC for the apply's whole
// run, however many subjects it quarantines.
//
// Earlier versions also took the per-subject advisory lock of every
// subject the apply quarantined or made an administrator, and above 512 of
// them locked rl_memberships and rl_admins in ACCESS EXCLUSIVE mode, which
// blocked every reader of those tables for the apply's whole run (up to
// 1.7 s measured, docs/performance-history.md). Step 1 already excludes every
// writer those locks were meant to exclude, so they are gone.
//
// Why a table lock rather than SELECT ... FOR UPDATE of every row: locking
// 100,000 rows writes every tuple's header (a no-op apply would dirty the
// whole table and its WAL) and cannot lock rows that do not exist yet, so a
// concurrent writer could still create a row the apply is creating. One
// table lock is one lock entry and covers phantoms.
func (q *Queries) LockForApply(ctx context.Context) error {
	if err := q.lock(ctx, ApplyLockKind, ""); err != nil {
		return fmt.Errorf("lock for apply: %w", err)
	}
	if _, err := q.db.Exec(ctx, `lock table rl_definitions, rl_memberships, rl_admins in share row exclusive mode`); err != nil {
		return fmt.Errorf("lock for apply: %w", interpretError(err))
	}
	return nil
}

// TransactionTime returns now() of the current transaction: the time every
// default and now() of the transaction's writes records.
func (q *Queries) TransactionTime(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := q.db.QueryRow(ctx, `select now()`).Scan(&t); err != nil {
		return t, fmt.Errorf("transaction time: %w", interpretError(err))
	}
	return t, nil
}

// AllDefinitions returns every definition, in id order, in one query.
func (q *Queries) AllDefinitions(ctx context.Context) ([]ratelimit.Definition, error) {
	return q.ListDefinitions(ctx, DefinitionFilter{})
}

// AllMemberships returns every membership, in id order, in one query.
func (q *Queries) AllMemberships(ctx context.Context) ([]ratelimit.Membership, error) {
	return q.ListMemberships(ctx, MembershipFilter{})
}

// AllAdmins returns every administrator identity in one query.
func (q *Queries) AllAdmins(ctx context.Context) ([]ratelimit.Admin, error) {
	return q.ListAdmins(ctx)
}

// copier is what pgx.Tx and *pgxpool.Pool offer for COPY beyond DBTX.
type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
}

// copyRows COPYs rows into table, checking that all of them arrived.
func (q *Queries) copyRows(ctx context.Context, table string, columns []string, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	c, ok := q.db.(copier)
	if !ok {
		return errors.New("bulk write: the database handle cannot COPY")
	}
	n, err := c.CopyFrom(ctx, pgx.Identifier{table}, columns, pgx.CopyFromRows(rows))
	if err != nil {
		return interpretError(err)
	}
	if n != int64(len(rows)) {
		return fmt.Errorf("copied %d of %d rows into %s", n, len(rows), table)
	}
	return nil
}

// tempTable (re)creates a transaction-scoped scratch table shaped like
// table, for COPY followed by a set-based UPDATE.
func (q *Queries) tempTable(ctx context.Context, name, like string) error {
	if _, err := q.db.Exec(ctx, `drop table if exists pg_temp.`+name); err != nil {
		return interpretError(err)
	}
	// CREATE TABLE AS copies the column types but no NOT NULL: an update
	// fills only the columns it changes.
	_, err := q.db.Exec(ctx, `create temp table `+name+` on commit drop as select * from `+like+` with no data`)
	return interpretError(err)
}

// expectRows turns a short write into ErrConflict: under LockForApply every
// row the diff found is still there, so a miss means the lock was not held.
func expectRows(what string, got int64, want int) error {
	if got != int64(want) {
		return fmt.Errorf("%w: %s touched %d rows, expected %d (was LockForApply held?)", ErrConflict, what, got, want)
	}
	return nil
}

var definitionCopyColumns = []string{"id", "axis", "entity_type", "name", "window_seconds", "max_requests",
	"user_max_requests", "agent_max_requests", "members", "fail_closed", "enabled", "mode", "description",
	"created_at", "updated_at", "updated_by", "version", "algorithm", "burst", "user_burst", "agent_burst",
	"everyone", "per", "descriptor",
	"methods", "paths", "exempt", "ip_max_requests", "ip_burst", "kinds", "tool_scope", "team_max_requests", "team_burst", "lease", "counts_toward_lockout", "fail_policy", "override"}

var definitionUpdateColumns = []string{"id", "max_requests", "user_max_requests", "agent_max_requests", "members",
	"fail_closed", "enabled", "mode", "description", "updated_at", "updated_by", "algorithm", "burst", "user_burst",
	"agent_burst", "everyone", "per", "descriptor",
	"methods", "paths", "exempt", "ip_max_requests", "ip_burst", "kinds", "tool_scope", "team_max_requests", "team_burst", "lease", "counts_toward_lockout", "fail_policy", "override"}

// serverGroupMembers is what the members column holds: the list for a
// server group, NULL for everything else.
func serverGroupMembers(d ratelimit.Definition) []string {
	if d.EntityType != ratelimit.EntityServerGroup {
		return nil
	}
	return d.Members
}

func definitionRow(d ratelimit.Definition) []any {
	mode := d.Mode
	if mode == "" {
		mode = ratelimit.ModeEnforce
	}
	return []any{d.Key(), d.Axis, d.EntityType, d.Name, int32(d.WindowSeconds), int32Ptr(d.MaxRequests),
		int32Ptr(d.UserMaxRequests), int32Ptr(d.AgentMaxRequests), serverGroupMembers(d), failClosedColumn(d), d.Enabled, mode,
		d.Description, timeOrNil(d.CreatedAt), timeOrNil(d.UpdatedAt), d.UpdatedBy, d.Version,
		algorithmColumn(d), int32Ptr(d.Burst), int32Ptr(d.UserBurst), int32Ptr(d.AgentBurst), d.Everyone, perColumn(d), descriptorColumn(d),
		routeMethods(d), routePaths(d), d.Exempt, int32Ptr(d.IPMaxRequests), int32Ptr(d.IPBurst), toolKinds(d), toolScope(d),
		int32Ptr(d.TeamMaxRequests), int32Ptr(d.TeamBurst), leaseColumn(d), d.CountsTowardLockout, failPolicyColumn(d), d.Overrides()}
}

func int32Ptr(v *int) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

// timeOrNil keeps an unset time NULL, so the column's NOT NULL refuses a
// row the caller forgot to complete instead of storing year 1.
func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

// InsertDefinitions creates definitions with one COPY. Each must be
// complete: CreatedAt, UpdatedAt, UpdatedBy and Version (1) set.
func (q *Queries) InsertDefinitions(ctx context.Context, defs []ratelimit.Definition) error {
	rows := make([][]any, len(defs))
	for i, d := range defs {
		rows[i] = definitionRow(d)
	}
	if err := q.copyRows(ctx, "rl_definitions", definitionCopyColumns, rows); err != nil {
		return fmt.Errorf("insert %d definitions: %w", len(defs), err)
	}
	return nil
}

// UpdateDefinitions replaces the changeable fields of existing definitions
// (limits, algorithm and bursts, members, flags, mode, lease, fail policy, description,
// updated_at, updated_by) and
// bumps each one's version by 1, with one COPY and one UPDATE.
func (q *Queries) UpdateDefinitions(ctx context.Context, defs []ratelimit.Definition) error {
	if len(defs) == 0 {
		return nil
	}
	rows := make([][]any, len(defs))
	for i, d := range defs {
		mode := d.Mode
		if mode == "" {
			mode = ratelimit.ModeEnforce
		}
		rows[i] = []any{d.Key(), int32Ptr(d.MaxRequests), int32Ptr(d.UserMaxRequests), int32Ptr(d.AgentMaxRequests),
			serverGroupMembers(d), failClosedColumn(d), d.Enabled, mode, d.Description, timeOrNil(d.UpdatedAt), d.UpdatedBy,
			algorithmColumn(d), int32Ptr(d.Burst), int32Ptr(d.UserBurst), int32Ptr(d.AgentBurst), d.Everyone, perColumn(d), descriptorColumn(d),
			routeMethods(d), routePaths(d), d.Exempt, int32Ptr(d.IPMaxRequests), int32Ptr(d.IPBurst), toolKinds(d), toolScope(d),
			int32Ptr(d.TeamMaxRequests), int32Ptr(d.TeamBurst), leaseColumn(d), d.CountsTowardLockout, failPolicyColumn(d), d.Overrides()}
	}
	if err := q.tempTable(ctx, "rl_apply_definitions", "rl_definitions"); err != nil {
		return fmt.Errorf("update %d definitions: %w", len(defs), err)
	}
	if err := q.copyRows(ctx, "rl_apply_definitions", definitionUpdateColumns, rows); err != nil {
		return fmt.Errorf("update %d definitions: %w", len(defs), err)
	}
	tag, err := q.db.Exec(ctx, `update rl_definitions t set
			max_requests = s.max_requests, user_max_requests = s.user_max_requests,
			agent_max_requests = s.agent_max_requests, members = s.members, fail_closed = s.fail_closed,
			enabled = s.enabled, mode = s.mode, description = s.description,
			algorithm = s.algorithm, burst = s.burst, user_burst = s.user_burst, agent_burst = s.agent_burst,
			everyone = s.everyone, per = s.per, descriptor = s.descriptor,
			methods = s.methods, paths = s.paths, exempt = s.exempt, ip_max_requests = s.ip_max_requests, ip_burst = s.ip_burst,
			kinds = s.kinds, tool_scope = s.tool_scope, team_max_requests = s.team_max_requests, team_burst = s.team_burst,
			lease = s.lease, counts_toward_lockout = s.counts_toward_lockout, fail_policy = s.fail_policy, override = s.override, updated_at = s.updated_at, updated_by = s.updated_by, version = t.version + 1
		from rl_apply_definitions s where t.id = s.id`)
	if err != nil {
		return fmt.Errorf("update %d definitions: %w", len(defs), interpretError(err))
	}
	return expectRows("update definitions", tag.RowsAffected(), len(defs))
}

// DeleteDefinitions removes definitions by id in one statement. The
// sentinels' trigger refuses to delete them (ErrInvalid).
func (q *Queries) DeleteDefinitions(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	tag, err := q.db.Exec(ctx, `delete from rl_definitions t using unnest($1::text[]) d(id) where t.id = d.id`, ids)
	if err != nil {
		return fmt.Errorf("delete %d definitions: %w", len(ids), interpretError(err))
	}
	return expectRows("delete definitions", tag.RowsAffected(), len(ids))
}

var membershipCopyColumns = []string{"subject_type", "subject", "groups", "quarantine_reason", "quarantined_at",
	"quarantine_expires_at", "version", "created_at", "updated_at"}

var membershipUpdateColumns = []string{"subject_type", "subject", "groups", "quarantine_reason", "quarantined_at",
	"quarantine_expires_at", "updated_at"}

func membershipRow(m ratelimit.Membership) []any {
	return []any{m.SubjectType, m.Subject, m.Groups, m.QuarantineReason, timeOrNil(m.QuarantinedAt),
		timeOrNil(m.QuarantineExpiresAt), m.Version, timeOrNil(m.CreatedAt), timeOrNil(m.UpdatedAt)}
}

// InsertMemberships creates memberships with one COPY. Each must be
// complete: CreatedAt, UpdatedAt and Version (1) set.
func (q *Queries) InsertMemberships(ctx context.Context, ms []ratelimit.Membership) error {
	rows := make([][]any, len(ms))
	for i, m := range ms {
		rows[i] = membershipRow(m)
	}
	if err := q.copyRows(ctx, "rl_memberships", membershipCopyColumns, rows); err != nil {
		return fmt.Errorf("insert %d memberships: %w", len(ms), err)
	}
	return nil
}

// UpdateMemberships replaces the groups and quarantine fields of existing
// memberships, sets updated_at and bumps each version by 1, with one COPY
// and one UPDATE.
func (q *Queries) UpdateMemberships(ctx context.Context, ms []ratelimit.Membership) error {
	if len(ms) == 0 {
		return nil
	}
	rows := make([][]any, len(ms))
	for i, m := range ms {
		rows[i] = []any{m.SubjectType, m.Subject, m.Groups, m.QuarantineReason, timeOrNil(m.QuarantinedAt),
			timeOrNil(m.QuarantineExpiresAt), timeOrNil(m.UpdatedAt)}
	}
	if err := q.tempTable(ctx, "rl_apply_memberships", "rl_memberships"); err != nil {
		return fmt.Errorf("update %d memberships: %w", len(ms), err)
	}
	if err := q.copyRows(ctx, "rl_apply_memberships", membershipUpdateColumns, rows); err != nil {
		return fmt.Errorf("update %d memberships: %w", len(ms), err)
	}
	tag, err := q.db.Exec(ctx, `update rl_memberships t set
			groups = s.groups, quarantine_reason = s.quarantine_reason, quarantined_at = s.quarantined_at,
			quarantine_expires_at = s.quarantine_expires_at, updated_at = s.updated_at, version = t.version + 1
		from rl_apply_memberships s where t.subject_type = s.subject_type and t.subject = s.subject`)
	if err != nil {
		return fmt.Errorf("update %d memberships: %w", len(ms), interpretError(err))
	}
	return expectRows("update memberships", tag.RowsAffected(), len(ms))
}

// DeleteMemberships removes memberships by id (<subject_type>:<subject>)
// in one statement.
func (q *Queries) DeleteMemberships(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	types, subjects, err := splitSubjectIDs(ids)
	if err != nil {
		return fmt.Errorf("delete %d memberships: %w", len(ids), err)
	}
	tag, err := q.db.Exec(ctx, `delete from rl_memberships t using unnest($1::text[], $2::text[]) d(subject_type, subject)
		where t.subject_type = d.subject_type and t.subject = d.subject`, types, subjects)
	if err != nil {
		return fmt.Errorf("delete %d memberships: %w", len(ids), interpretError(err))
	}
	return expectRows("delete memberships", tag.RowsAffected(), len(ids))
}

func splitSubjectIDs(ids []string) (types, subjects []string, err error) {
	types, subjects = make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		if types[i], subjects[i], err = ratelimit.ParseMembershipID(id); err != nil {
			return nil, nil, err
		}
	}
	return types, subjects, nil
}

// InsertAdmins grants administrator privileges to new subjects in one
// statement. Each must carry CreatedAt and CreatedBy.
func (q *Queries) InsertAdmins(ctx context.Context, admins []ratelimit.Admin) error {
	if len(admins) == 0 {
		return nil
	}
	n := len(admins)
	types, subjects, notes, by := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	at := make([]time.Time, n)
	for i, a := range admins {
		if a.CreatedAt == nil {
			return fmt.Errorf("insert admins: %q has no created_at", a.Key())
		}
		types[i], subjects[i], notes[i], by[i], at[i] = a.SubjectType, a.Subject, a.Note, a.CreatedBy, *a.CreatedAt
	}
	tag, err := q.db.Exec(ctx, `insert into rl_admins (subject_type, subject, note, created_by, created_at)
		select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[])`,
		types, subjects, notes, by, at)
	if err != nil {
		return fmt.Errorf("insert %d admins: %w", n, interpretError(err))
	}
	return expectRows("insert admins", tag.RowsAffected(), n)
}

// UpdateAdmins replaces the notes of existing admins in one statement.
func (q *Queries) UpdateAdmins(ctx context.Context, admins []ratelimit.Admin) error {
	if len(admins) == 0 {
		return nil
	}
	n := len(admins)
	types, subjects, notes := make([]string, n), make([]string, n), make([]string, n)
	for i, a := range admins {
		types[i], subjects[i], notes[i] = a.SubjectType, a.Subject, a.Note
	}
	tag, err := q.db.Exec(ctx, `update rl_admins t set note = s.note
		from unnest($1::text[], $2::text[], $3::text[]) s(subject_type, subject, note)
		where t.subject_type = s.subject_type and t.subject = s.subject`, types, subjects, notes)
	if err != nil {
		return fmt.Errorf("update %d admins: %w", n, interpretError(err))
	}
	return expectRows("update admins", tag.RowsAffected(), n)
}

// DeleteAdmins revokes administrator privileges by id in one statement.
func (q *Queries) DeleteAdmins(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	types, subjects, err := splitSubjectIDs(ids)
	if err != nil {
		return fmt.Errorf("delete %d admins: %w", len(ids), err)
	}
	tag, err := q.db.Exec(ctx, `delete from rl_admins t using unnest($1::text[], $2::text[]) d(subject_type, subject)
		where t.subject_type = d.subject_type and t.subject = d.subject`, types, subjects)
	if err != nil {
		return fmt.Errorf("delete %d admins: %w", len(ids), interpretError(err))
	}
	return expectRows("delete admins", tag.RowsAffected(), len(ids))
}

var auditCopyColumns = []string{"actor", "action", "resource_type", "resource_id", "before", "after", "request_id"}

// InsertAudits records many mutations with one COPY, in slice order (ids
// ascend with it). Call it in the transaction of the changes.
func (q *Queries) InsertAudits(ctx context.Context, audits []Audit) error {
	rows := make([][]any, len(audits))
	for i, a := range audits {
		before, err := jsonOrNil(a.Before)
		if err != nil {
			return err
		}
		after, err := jsonOrNil(a.After)
		if err != nil {
			return err
		}
		rows[i] = []any{a.Actor, a.Action, a.ResourceType, a.ResourceID, before, after, a.RequestID} // nil []byte: NULL
	}
	if err := q.copyRows(ctx, "rl_audit_log", auditCopyColumns, rows); err != nil {
		return fmt.Errorf("write %d audit rows: %w", len(audits), err)
	}
	return nil
}
