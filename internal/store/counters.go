package store

import (
	"context"
	"fmt"
	"time"
)

// Gate is one counter a decision checks: a key, its window, its limit.
type Gate struct {
	Key         string
	WindowIndex int64
	Limit       int64
	// Enforce is false for shadow gates: they count but never deny.
	Enforce   bool
	ExpiresAt time.Time
}

// TakeResult is what rl_take decided.
type TakeResult struct {
	Allowed bool
	Counts  []int64 // per gate, after the decision
	Room    []bool  // per gate: whether it had room for the call
}

// Take decides one call against all its gates in one round trip (the
// rl_take function): all or nothing, denials read-only. gates must be sorted
// by (Key, WindowIndex) so concurrent decisions lock in one order. With
// consume false it only reads (a peek).
func (q *Queries) Take(ctx context.Context, gates []Gate, cost int64, consume bool) (TakeResult, error) {
	n := len(gates)
	keys := make([]string, n)
	windows := make([]int64, n)
	limits := make([]int64, n)
	enforce := make([]bool, n)
	expires := make([]time.Time, n)
	for i, g := range gates {
		keys[i], windows[i], limits[i], enforce[i], expires[i] = g.Key, g.WindowIndex, g.Limit, g.Enforce, g.ExpiresAt
	}
	var r TakeResult
	err := q.db.QueryRow(ctx, `select allowed, counts, room from rl_take($1, $2, $3, $4, $5, $6, $7)`,
		keys, windows, limits, enforce, expires, cost, consume).Scan(&r.Allowed, &r.Counts, &r.Room)
	if err != nil {
		return r, fmt.Errorf("take counters: %w", interpretError(err))
	}
	if len(r.Room) > n {
		r.Room = r.Room[:n]
	}
	return r, nil
}

// CounterRow is one stored counter.
type CounterRow struct {
	Key         string    `json:"key"`
	WindowIndex int64     `json:"window_index"`
	Count       int64     `json:"count"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Counters lists the live counters whose key starts with prefix.
func (q *Queries) Counters(ctx context.Context, prefix string, now time.Time, limit int) ([]CounterRow, error) {
	rows, err := q.db.Query(ctx, `select key, window_index, count, expires_at from rl_counters
		where key like $1 escape '\' and expires_at > $2 order by key, window_index limit $3`,
		likePrefix(prefix), now, limit)
	if err != nil {
		return nil, fmt.Errorf("list counters: %w", interpretError(err))
	}
	defer rows.Close()
	var out []CounterRow
	for rows.Next() {
		var c CounterRow
		if err := rows.Scan(&c.Key, &c.WindowIndex, &c.Count, &c.ExpiresAt); err != nil {
			return nil, fmt.Errorf("list counters: %w", interpretError(err))
		}
		out = append(out, c)
	}
	return out, interpretError(rows.Err())
}

// DeleteCounters removes the counters whose key contains substring: a reset
// of one subject's usage. It returns how many rows it removed.
func (q *Queries) DeleteCounters(ctx context.Context, substring string) (int64, error) {
	tag, err := q.db.Exec(ctx, `delete from rl_counters where key like $1 escape '\'`, "%"+likeEscape(substring)+"%")
	if err != nil {
		return 0, fmt.Errorf("reset counters: %w", interpretError(err))
	}
	return tag.RowsAffected(), nil
}

// SweepCounters deletes up to batch expired counters, one replica at a time
// (a transaction-scoped advisory lock; others skip). It reports how many it
// removed and whether it held the lock.
func (s *Store) SweepCounters(ctx context.Context, now time.Time, batch int) (removed int64, ran bool, err error) {
	err = s.InTx(ctx, func(q *Queries) error {
		if err := q.db.QueryRow(ctx, `select pg_try_advisory_xact_lock(hashtext('rlctl counter sweep'))`).Scan(&ran); err != nil {
			return interpretError(err)
		}
		if !ran {
			return nil
		}
		tag, err := q.db.Exec(ctx, `delete from rl_counters where ctid = any (array(
			select ctid from rl_counters where expires_at <= $1 limit $2))`, now, batch)
		if err != nil {
			return interpretError(err)
		}
		removed = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("sweep counters: %w", err)
	}
	return removed, ran, nil
}

func likePrefix(p string) string { return likeEscape(p) + "%" }

func likeEscape(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '%' || r == '_' || r == '\\' {
			out = append(out, '\\')
		}
		out = append(out, r)
	}
	return string(out)
}
