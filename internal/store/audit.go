package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Audit describes one mutation to record. Before and After are marshalled
// to JSON; nil means "did not exist".
type Audit struct {
	Actor        string
	Action       string
	ResourceType string
	ResourceID   string
	Before       any
	After        any
	RequestID    string
}

// InsertAudit records a mutation. Call it in the transaction of the change,
// so a change is never without its audit row, nor a row without its change.
func (q *Queries) InsertAudit(ctx context.Context, a Audit) error {
	before, err := jsonOrNil(a.Before)
	if err != nil {
		return err
	}
	after, err := jsonOrNil(a.After)
	if err != nil {
		return err
	}
	_, err = q.db.Exec(ctx, `insert into rl_audit_log (actor, action, resource_type, resource_id, before, after, request_id)
		values ($1, $2, $3, $4, $5, $6, $7)`, a.Actor, a.Action, a.ResourceType, a.ResourceID, before, after, a.RequestID)
	if err != nil {
		return fmt.Errorf("write audit: %w", interpretError(err))
	}
	return nil
}

// jsonOrNil marshals v, keeping a nil pointer as SQL NULL.
func jsonOrNil(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("write audit: %w", err)
	}
	if string(b) == "null" {
		return nil, nil
	}
	return b, nil
}

// AuditFilter narrows ListAudit.
type AuditFilter struct {
	Since time.Time
	// Resource matches the resource type ("definition") or
	// "<type>/<id>" for one resource.
	Resource string
	Actor    string
	// Before is the paging cursor for newest-first pages: only ids below it.
	Before int64
	// After returns entries with larger ids, oldest first (for following).
	After int64
	Limit int
}

// ListAudit returns audit entries, newest first (oldest first with After).
func (q *Queries) ListAudit(ctx context.Context, f AuditFilter) ([]ratelimit.AuditEntry, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if !f.Since.IsZero() {
		add("at >= $%d", f.Since)
	}
	if f.Resource != "" {
		if typ, id, ok := strings.Cut(f.Resource, "/"); ok {
			add("resource_type = $%d", typ)
			add("resource_id = $%d", id)
		} else {
			add("resource_type = $%d", f.Resource)
		}
	}
	if f.Actor != "" {
		add("actor = $%d", f.Actor)
	}
	if f.Before > 0 {
		add("id < $%d", f.Before)
	}
	order := "desc"
	if f.After > 0 {
		add("id > $%d", f.After)
		order = "asc"
	}
	sql := `select id, at, actor, action, resource_type, resource_id, before, after, request_id from rl_audit_log`
	if len(where) > 0 {
		sql += ` where ` + strings.Join(where, " and ")
	}
	sql += ` order by id ` + order
	if f.Limit > 0 {
		sql += fmt.Sprintf(` limit %d`, f.Limit)
	}
	rows, err := q.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ratelimit.AuditEntry, error) {
		var e ratelimit.AuditEntry
		var before, after []byte
		err := r.Scan(&e.ID, &e.Time, &e.Actor, &e.Action, &e.ResourceType, &e.ResourceID, &before, &after, &e.RequestID)
		e.Before, e.After = before, after
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list audit: %w", interpretError(err))
	}
	return out, nil
}

// Counts is a summary of what the store holds.
type Counts struct {
	Definitions int64 `json:"definitions"`
	Memberships int64 `json:"memberships"`
	Quarantined int64 `json:"quarantined"`
	Admins      int64 `json:"admins"`
	Tokens      int64 `json:"tokens"`
}

// Count summarizes the store in one round trip.
func (q *Queries) Count(ctx context.Context) (Counts, error) {
	var c Counts
	err := q.db.QueryRow(ctx, `select
		(select count(*) from rl_definitions),
		(select count(*) from rl_memberships),
		(select count(*) from rl_memberships where groups && array['quarantine-callers', 'quarantine-targets']),
		(select count(*) from rl_admins),
		(select count(*) from rl_api_tokens where revoked_at is null)`).
		Scan(&c.Definitions, &c.Memberships, &c.Quarantined, &c.Admins, &c.Tokens)
	if err != nil {
		return c, fmt.Errorf("count: %w", interpretError(err))
	}
	return c, nil
}
