package store

import (
	"context"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// settingsLock is the advisory lock key of the settings row.
const settingsLock = "settings"

// GetEnforcement reads the master switch. Before anything has set it there
// is no row, and the answer is the default: enabled, version 0.
func (q *Queries) GetEnforcement(ctx context.Context) (ratelimit.Enforcement, error) {
	e := ratelimit.Enforcement{Enabled: true}
	err := q.db.QueryRow(ctx, `select enforcement_enabled, reason, updated_at, updated_by, version from rl_settings`).
		Scan(&e.Enabled, &e.Reason, &e.UpdatedAt, &e.UpdatedBy, &e.Version)
	if err != nil && !isNotFound(interpretError(err)) {
		return e, fmt.Errorf("get enforcement switch: %w", interpretError(err))
	}
	return e, nil
}

// EnforcementEnabled reads the master switch for an enforcement snapshot.
// A schema that predates the switch (a gateway rolled out before
// `rlapi migrate`) reads as enabled instead of failing every reload.
func (q *Queries) EnforcementEnabled(ctx context.Context) (bool, error) {
	var present bool
	if err := q.db.QueryRow(ctx, `select to_regclass('rl_settings') is not null`).Scan(&present); err != nil {
		return true, fmt.Errorf("get enforcement switch: %w", interpretError(err))
	}
	if !present {
		return true, nil
	}
	e, err := q.GetEnforcement(ctx)
	return e.Enabled, err
}

// SetEnforcement switches enforcement on or off and returns the stored
// switch and the one it replaced. ifVersion > 0 makes it conditional
// (ErrPreconditionFailed when the stored version differs; a switch never
// set has version 0). Setting the value it already has changes nothing
// (changed false). Run it in the transaction that writes its audit row.
func (q *Queries) SetEnforcement(ctx context.Context, enabled bool, reason, actor string, ifVersion int64) (after, before ratelimit.Enforcement, changed bool, err error) {
	// Its own lock, not the per-row lock that waits for a running apply:
	// switching enforcement off mid-incident must never queue behind one.
	if _, err := q.db.Exec(ctx, `select pg_advisory_xact_lock(hashtext($1), hashtext('enforcement'))`, settingsLock); err != nil {
		return after, before, false, interpretError(err)
	}
	if before, err = q.GetEnforcement(ctx); err != nil {
		return after, before, false, err
	}
	if ifVersion > 0 && before.Version != ifVersion {
		return before, before, false, fmt.Errorf("%w: expected version %d, stored version is %d", ErrPreconditionFailed, ifVersion, before.Version)
	}
	if before.Version > 0 && before.Enabled == enabled && before.Reason == reason {
		return before, before, false, nil
	}
	after = ratelimit.Enforcement{}
	err = q.db.QueryRow(ctx, `
		insert into rl_settings (enforcement_enabled, reason, updated_by) values ($1, $2, $3)
		on conflict (singleton) do update set enforcement_enabled = excluded.enforcement_enabled,
			reason = excluded.reason, updated_by = excluded.updated_by, updated_at = now(),
			version = rl_settings.version + 1
		returning enforcement_enabled, reason, updated_at, updated_by, version`, enabled, reason, actor).
		Scan(&after.Enabled, &after.Reason, &after.UpdatedAt, &after.UpdatedBy, &after.Version)
	if err != nil {
		return after, before, false, fmt.Errorf("set enforcement switch: %w", interpretError(err))
	}
	return after, before, true, nil
}

// SeedEnforcement sets the switch only when nothing has set it yet (no
// row): a start-up default never overrides an operator's choice. It
// reports whether it wrote.
func (q *Queries) SeedEnforcement(ctx context.Context, enabled bool, reason, actor string) (ratelimit.Enforcement, bool, error) {
	var e ratelimit.Enforcement
	err := q.db.QueryRow(ctx, `
		insert into rl_settings (enforcement_enabled, reason, updated_by) values ($1, $2, $3)
		on conflict (singleton) do nothing
		returning enforcement_enabled, reason, updated_at, updated_by, version`, enabled, reason, actor).
		Scan(&e.Enabled, &e.Reason, &e.UpdatedAt, &e.UpdatedBy, &e.Version)
	if err != nil {
		if isNotFound(interpretError(err)) {
			e, err = q.GetEnforcement(ctx)
			return e, false, err
		}
		return e, false, fmt.Errorf("seed enforcement switch: %w", interpretError(err))
	}
	return e, true, nil
}

// CountQuarantined counts the subjects whose quarantine applies at now:
// callers (users, clients) and targets (servers, agents).
func (q *Queries) CountQuarantined(ctx context.Context, now time.Time) (callers, targets int64, err error) {
	err = q.db.QueryRow(ctx, `select
			count(*) filter (where 'quarantine-callers' = any (groups)),
			count(*) filter (where 'quarantine-targets' = any (groups))
		from rl_memberships
		where groups && array['quarantine-callers', 'quarantine-targets']
		  and (quarantine_expires_at is null or quarantine_expires_at > $1)`, now).Scan(&callers, &targets)
	if err != nil {
		return 0, 0, fmt.Errorf("count quarantined: %w", interpretError(err))
	}
	return callers, targets, nil
}
