package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// UpsertEvents adds aggregated events to the record (rl_events, migrations
// 017 and 023) in one statement: a row already there for the same minute,
// kind, subject and definition grows by the event's count (and a summary
// row by its more_subjects) and takes its context. The keys in evs must be distinct (pkg/enforce's recorder keeps
// one entry per key).
func (s *Store) UpsertEvents(ctx context.Context, evs []ratelimit.Event) error {
	if len(evs) == 0 {
		return nil
	}
	n := len(evs)
	var (
		minutes, first, last                              = make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
		kinds, sevs, subjects, defs, callers, ips, ttypes = make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		targets, tiers, teams, paths                      = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		limits, counts, more                              = make([]int64, n), make([]int64, n), make([]int64, n)
	)
	for i, e := range evs {
		minutes[i], first[i], last[i] = e.Minute, e.FirstSeen, e.LastSeen
		kinds[i], sevs[i], subjects[i], defs[i], callers[i], ips[i], ttypes[i] = e.Kind, e.Severity, e.Subject, e.DefinitionID, e.Caller, e.ClientIP, e.TargetType
		targets[i], tiers[i], teams[i], paths[i] = e.Target, e.Tier, e.Team, e.Path
		limits[i], counts[i], more[i] = e.Limit, e.Count, e.MoreSubjects
	}
	_, err := s.pool.Exec(ctx, `insert into rl_events (minute, kind, severity, subject, definition_id, caller, client_ip,
			target_type, target, tier, rate_limit, count, first_seen, last_seen, team, path, more_subjects)
		select * from unnest($1::timestamptz[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
			$8::text[], $9::text[], $10::text[], $11::bigint[], $12::bigint[], $13::timestamptz[], $14::timestamptz[],
			$15::text[], $16::text[], $17::bigint[])
		on conflict (minute, kind, subject, definition_id) do update set
			count = rl_events.count + excluded.count,
			more_subjects = rl_events.more_subjects + excluded.more_subjects,
			severity = excluded.severity, caller = excluded.caller, client_ip = excluded.client_ip,
			target_type = excluded.target_type, target = excluded.target, tier = excluded.tier,
			team = excluded.team, path = excluded.path, rate_limit = excluded.rate_limit,
			first_seen = least(rl_events.first_seen, excluded.first_seen),
			last_seen = greatest(rl_events.last_seen, excluded.last_seen)`,
		minutes, kinds, sevs, subjects, defs, callers, ips, ttypes, targets, tiers, limits, counts, first, last, teams, paths, more)
	if err != nil {
		return fmt.Errorf("write events: %w", interpretError(err))
	}
	return nil
}

// EventFilter narrows ListEvents; zero fields match everything.
type EventFilter struct {
	Subject      string
	DefinitionID string
	Kind         string
	Severity     string
	// Since and Until bound the events' minute: Since <= minute < Until.
	Since, Until time.Time
	// Before is the paging cursor for newest-first pages: only ids below it.
	Before int64
	// After returns rows with larger ids, oldest first (for following).
	After int64
	Limit int
}

const eventColumns = `id, minute, kind, severity, subject, definition_id, caller, client_ip, target_type, target, tier,
	rate_limit, count, first_seen, last_seen, team, path, more_subjects`

// ListEvents returns recorded events, newest first (oldest first with
// After).
func (q *Queries) ListEvents(ctx context.Context, f EventFilter) ([]ratelimit.Event, error) {
	var (
		where []string
		args  []any
	)
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	for cond, v := range map[string]string{"subject = $%d": f.Subject, "definition_id = $%d": f.DefinitionID,
		"kind = $%d": f.Kind, "severity = $%d": f.Severity} {
		if v != "" {
			add(cond, v)
		}
	}
	if !f.Since.IsZero() {
		add("minute >= date_trunc('minute', $%d::timestamptz)", f.Since)
	}
	if !f.Until.IsZero() {
		add("minute < $%d", f.Until)
	}
	if f.Before > 0 {
		add("id < $%d", f.Before)
	}
	order := "desc"
	if f.After > 0 {
		add("id > $%d", f.After)
		order = "asc"
	}
	sql := `select ` + eventColumns + ` from rl_events`
	if len(where) > 0 {
		sql += ` where ` + strings.Join(where, " and ")
	}
	sql += ` order by id ` + order
	if f.Limit > 0 {
		sql += fmt.Sprintf(` limit %d`, f.Limit)
	}
	rows, err := q.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ratelimit.Event, error) {
		var e ratelimit.Event
		err := r.Scan(&e.ID, &e.Minute, &e.Kind, &e.Severity, &e.Subject, &e.DefinitionID, &e.Caller, &e.ClientIP,
			&e.TargetType, &e.Target, &e.Tier, &e.Limit, &e.Count, &e.FirstSeen, &e.LastSeen, &e.Team, &e.Path, &e.MoreSubjects)
		e.Minute, e.FirstSeen, e.LastSeen = e.Minute.UTC(), e.FirstSeen.UTC(), e.LastSeen.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", interpretError(err))
	}
	return out, nil
}

// SweepEvents deletes events whose minute is before cutoff, up to batch
// rows (the retention sweeper calls it until it deletes fewer).
func (s *Store) SweepEvents(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	tag, err := s.pool.Exec(ctx, `delete from rl_events where id in
		(select id from rl_events where minute < $1 order by minute limit $2)`, cutoff, max(batch, 1))
	if err != nil {
		return 0, fmt.Errorf("sweep events: %w", interpretError(err))
	}
	return tag.RowsAffected(), nil
}
