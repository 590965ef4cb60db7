package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const tokenColumns = `name, role, created_at, expires_at, last_used_at, revoked_at`

func scanToken(row pgx.Row) (ratelimit.Token, error) {
	var t ratelimit.Token
	err := row.Scan(&t.Name, &t.Role, &t.CreatedAt, &t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt)
	return t, err
}

// CreateToken stores a token's name, role and SHA-256. A name in use by a
// live token is ErrConflict; the name of a revoked token can be reused.
func (q *Queries) CreateToken(ctx context.Context, name, role string, sha256 []byte, expiresAt *time.Time) (ratelimit.Token, error) {
	t, err := scanToken(q.db.QueryRow(ctx, `
		insert into rl_api_tokens (name, role, token_sha256, expires_at) values ($1, $2, $3, $4)
		on conflict (name) do update set
			role = excluded.role, token_sha256 = excluded.token_sha256, expires_at = excluded.expires_at,
			created_at = now(), last_used_at = null, revoked_at = null
		where rl_api_tokens.revoked_at is not null
		returning `+tokenColumns, name, role, sha256, expiresAt))
	if err != nil {
		if isNotFound(interpretError(err)) {
			return t, fmt.Errorf("create token %q: %w: a token with that name exists; revoke it first", name, ErrConflict)
		}
		return t, fmt.Errorf("create token %q: %w", name, interpretError(err))
	}
	return t, nil
}

// TokenByHash finds the token whose SHA-256 is sha256, revoked and expired
// ones included: the caller decides what they may do.
func (q *Queries) TokenByHash(ctx context.Context, sha256 []byte) (ratelimit.Token, error) {
	t, err := scanToken(q.db.QueryRow(ctx, `select `+tokenColumns+` from rl_api_tokens where token_sha256 = $1`, sha256))
	if err != nil {
		return t, fmt.Errorf("find token: %w", interpretError(err))
	}
	return t, nil
}

// TouchToken records that the token was used at.
func (q *Queries) TouchToken(ctx context.Context, name string, at time.Time) error {
	_, err := q.db.Exec(ctx, `update rl_api_tokens set last_used_at = $2 where name = $1`, name, at)
	return interpretError(err)
}

// ListTokens returns every token, revoked ones too, by name.
func (q *Queries) ListTokens(ctx context.Context) ([]ratelimit.Token, error) {
	rows, err := q.db.Query(ctx, `select `+tokenColumns+` from rl_api_tokens order by name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", interpretError(err))
	}
	tokens, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ratelimit.Token, error) { return scanToken(r) })
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", interpretError(err))
	}
	return tokens, nil
}

// TokensChannel is where RevokeToken announces a revocation (NOTIFY, sent
// when the revoking transaction commits): every rlapi replica listens and
// drops its cached tokens.
const TokensChannel = "rlctl_tokens"

// RevokeToken marks a live token revoked and returns it as it was before.
// A token that is unknown or already revoked is ErrNotFound. It notifies
// TokensChannel with the token's name.
func (q *Queries) RevokeToken(ctx context.Context, name string, at time.Time) (ratelimit.Token, error) {
	t, err := scanToken(q.db.QueryRow(ctx, `
		update rl_api_tokens set revoked_at = $2 where name = $1 and revoked_at is null
		returning `+tokenColumns, name, at))
	if err != nil {
		return t, fmt.Errorf("revoke token %q: %w", name, interpretError(err))
	}
	if _, err := q.db.Exec(ctx, `select pg_notify($1, $2)`, TokensChannel, name); err != nil {
		return t, fmt.Errorf("revoke token %q: notify: %w", name, interpretError(err))
	}
	t.RevokedAt = nil
	return t, nil
}
