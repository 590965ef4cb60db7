package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuthLockoutsChannel is where LiftAuthLockout announces a lifted
// failed-credential lockout (NOTIFY, sent when the lifting transaction
// commits), with the payload <scope>|<address key>. Every rlapi replica
// (its own throttle) and every Enforcer on this database (the gateways')
// listens and forgets what it cached of the address, so the lift holds on
// all of them at once.
const AuthLockoutsChannel = "rlctl_auth_lockouts"

// AuthCounters lists the live counters of the failed-credential throttle
// (failures and lockouts, every scope), at most limit rows: the keys that
// start with one of prefixes (the kinds' prefixes, which the caller takes
// from the key type, pkg/enforce: the store holds no key grammar).
func (q *Queries) AuthCounters(ctx context.Context, now time.Time, limit int, prefixes ...string) ([]CounterRow, error) {
	likes := make([]string, len(prefixes))
	for i, p := range prefixes {
		likes[i] = likePrefix(p)
	}
	rows, err := q.db.Query(ctx, `select key, window_index, count, expires_at from rl_counters
		where key like any($1) and expires_at > $2 order by key, window_index limit $3`, likes, now, limit)
	if err != nil {
		return nil, fmt.Errorf("list auth counters: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, scanCounter)
	if err != nil {
		return nil, fmt.Errorf("list auth counters: %w", interpretError(err))
	}
	return out, nil
}

// AuthAddressKeys name one client address's failed-credential counters
// in one scope, as the key type (pkg/enforce) writes them: the lockout's
// key, and the failures' keys of every window, which start with
// FailuresPrefix and end with FailuresSuffix. Notice is the
// AuthLockoutsChannel payload naming the address.
type AuthAddressKeys struct {
	Lockout                        string
	FailuresPrefix, FailuresSuffix string
	Notice                         string
}

// LiftAuthLockout deletes the failed-credential counters k names (an
// address's lockout and its failures, every window) and notifies
// AuthLockoutsChannel, in q's transaction: the notice goes out when it
// commits, never for a rolled-back dry run. It returns the rows deleted.
func (q *Queries) LiftAuthLockout(ctx context.Context, k AuthAddressKeys) ([]CounterRow, error) {
	rows, err := q.db.Query(ctx, `delete from rl_counters
		where key = $1 or (key like $2 escape '\' and key like $3 escape '\')
		returning key, window_index, count, expires_at`,
		CounterKeyText(k.Lockout), likePrefix(k.FailuresPrefix), "%"+likeEscape(k.FailuresSuffix))
	if err != nil {
		return nil, fmt.Errorf("lift auth lockout %s: %w", k.Notice, interpretError(err))
	}
	out, err := pgx.CollectRows(rows, scanCounter)
	if err != nil {
		return nil, fmt.Errorf("lift auth lockout %s: %w", k.Notice, interpretError(err))
	}
	if _, err := q.db.Exec(ctx, `select pg_notify($1, $2)`, AuthLockoutsChannel, k.Notice); err != nil {
		return nil, fmt.Errorf("lift auth lockout %s: notify: %w", k.Notice, interpretError(err))
	}
	return out, nil
}
