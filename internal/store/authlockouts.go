package store

import (
	"context"
	"fmt"
	"strings"
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

// Prefixes of the failed-credential throttle's counter keys
// (pkg/enforce/authfail.go): af|<scope>|<window>|ip:<address> counts the
// failures, al|<scope>|ip:<address> is the lockout.
const (
	authFailuresPrefix = "af|"
	authLockoutPrefix  = "al|"
)

// AuthCounters lists the live counters of the failed-credential throttle
// (failures and lockouts, every scope), at most limit rows.
func (q *Queries) AuthCounters(ctx context.Context, now time.Time, limit int) ([]CounterRow, error) {
	rows, err := q.db.Query(ctx, `select key, window_index, count, expires_at from rl_counters
		where (key like 'af|%' or key like 'al|%') and expires_at > $1 order by key, window_index limit $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("list auth counters: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, scanCounter)
	if err != nil {
		return nil, fmt.Errorf("list auth counters: %w", interpretError(err))
	}
	return out, nil
}

// AuthCounterAddress reads an auth throttle counter key back: its scope
// and the address key it counts (ok false for any other key).
func AuthCounterAddress(key string) (scope, address string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(key, authLockoutPrefix):
		rest = key[len(authLockoutPrefix):]
	case strings.HasPrefix(key, authFailuresPrefix):
		rest = key[len(authFailuresPrefix):]
		s, tail, found := strings.Cut(rest, "|")
		if !found {
			return "", "", false
		}
		if _, tail, found = strings.Cut(tail, "|"); !found {
			return "", "", false
		}
		rest = s + "|" + tail
	default:
		return "", "", false
	}
	scope, ip, found := strings.Cut(rest, "|")
	address, isIP := strings.CutPrefix(ip, "ip:")
	if !found || !isIP || scope == "" || address == "" {
		return "", "", false
	}
	return scope, address, true
}

// LiftAuthLockout deletes address's failed-credential counters in scope
// (its lockout and its failures, every window) and notifies
// AuthLockoutsChannel, in q's transaction: the notice goes out when it
// commits, never for a rolled-back dry run. It returns the rows deleted.
func (q *Queries) LiftAuthLockout(ctx context.Context, scope, address string) ([]CounterRow, error) {
	rows, err := q.db.Query(ctx, `delete from rl_counters
		where key = $1 or (key like $2 escape '\' and key like $3 escape '\')
		returning key, window_index, count, expires_at`,
		CounterKeyText(authLockoutPrefix+scope+"|ip:"+address),
		likePrefix(authFailuresPrefix+scope+"|"), "%"+likeEscape("|ip:"+address))
	if err != nil {
		return nil, fmt.Errorf("lift auth lockout of %s: %w", address, interpretError(err))
	}
	out, err := pgx.CollectRows(rows, scanCounter)
	if err != nil {
		return nil, fmt.Errorf("lift auth lockout of %s: %w", address, interpretError(err))
	}
	if _, err := q.db.Exec(ctx, `select pg_notify($1, $2)`, AuthLockoutsChannel, scope+"|"+address); err != nil {
		return nil, fmt.Errorf("lift auth lockout of %s: notify: %w", address, interpretError(err))
	}
	return out, nil
}
