package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Names of the advisory locks rlapi's sweeps hold for a round
// (WithSweepLock): one replica sweeps at a time, the others skip the round.
const (
	EventsSweepLock   = "rlctl events sweep"
	LockoutsSweepLock = "rlctl lockouts sweep"
)

// WithSweepLock runs fn while this store holds the session-level advisory
// lock named name, so that of the replicas sharing the database only one
// runs fn at a time; it reports false, without running fn, when another
// session holds the lock. The lock is held on a connection of its own for
// the whole of fn (fn's queries use the pool as usual) and released when fn
// returns; if that connection is lost meanwhile the server releases it.
func (s *Store) WithSweepLock(ctx context.Context, name string, fn func(context.Context) error) (ran bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("sweep lock %q: %w", name, interpretError(err))
	}
	if err := conn.QueryRow(ctx, `select pg_try_advisory_lock(hashtext($1))`, name).Scan(&ran); err != nil {
		conn.Release()
		return false, fmt.Errorf("sweep lock %q: %w", name, interpretError(err))
	}
	if !ran {
		conn.Release()
		return false, nil
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, `select pg_advisory_unlock(hashtext($1))`, name); uerr != nil {
			// Closing the session releases the lock for sure.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}()
	return true, fn(ctx)
}

// lockoutExpiredAction is the audit action of a lockout the sweep removed
// (actor LockoutActor).
const lockoutExpiredAction = "lockout-expired"

// SweepExpiredLockouts deletes up to batch memberships that hold nothing
// but an escalation lockout (their only group quarantine-callers, a reason
// starting "lockout: ") whose expiry is at or before before: an anonymous
// caller's network lockout, or a caller with no groups of its own. Each
// deletion is audited (LockoutActor, "lockout-expired") in the
// transaction that makes it, under the subject's lock, after checking the
// row again, so an operator's concurrent change wins. A membership with
// other groups keeps its expired quarantine, as before.
func (s *Store) SweepExpiredLockouts(ctx context.Context, before time.Time, batch int) (int64, error) {
	var removed int64
	err := s.InTx(ctx, func(q *Queries) error {
		rows, err := q.db.Query(ctx, `select subject_type, subject from rl_memberships
			where groups = array[$1]::text[] and quarantine_expires_at is not null and quarantine_expires_at <= $2
			  and starts_with(quarantine_reason, $3)
			order by quarantine_expires_at limit $4`, ratelimit.GroupQuarantineCallers, before, lockoutReasonPrefix, max(batch, 1))
		if err != nil {
			return interpretError(err)
		}
		var ids [][2]string
		for rows.Next() {
			var id [2]string
			if err := rows.Scan(&id[0], &id[1]); err != nil {
				rows.Close()
				return interpretError(err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return interpretError(err)
		}
		for _, id := range ids {
			if err := q.LockSubject(ctx, id[0], id[1]); err != nil {
				return err
			}
			m, err := q.GetMembership(ctx, id[0], id[1])
			if isNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			if !expiredLockoutOnly(m, before) {
				continue // changed meanwhile
			}
			if _, err := q.DeleteMembership(ctx, id[0], id[1], Write{}); err != nil {
				return err
			}
			if err := q.InsertAudit(ctx, Audit{Actor: LockoutActor, Action: lockoutExpiredAction, ResourceType: "membership",
				ResourceID: m.Key(), Before: &m}); err != nil {
				return err
			}
			removed++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sweep expired lockouts: %w", err)
	}
	return removed, nil
}

// lockoutReasonPrefix starts every escalation lockout's reason
// (enforce.LockoutReasonPrefix; the store does not import pkg/enforce).
const lockoutReasonPrefix = "lockout: "

func expiredLockoutOnly(m ratelimit.Membership, before time.Time) bool {
	return len(m.Groups) == 1 && m.Groups[0] == ratelimit.GroupQuarantineCallers && m.QuarantineExpiresAt != nil &&
		!m.QuarantineExpiresAt.After(before) && strings.HasPrefix(m.QuarantineReason, lockoutReasonPrefix)
}
