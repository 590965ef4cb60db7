// Package store is the only package that speaks SQL. It wraps a pgx pool,
// maps PostgreSQL errors to the sentinels below so no pgx type or error leaks
// out, and offers every query on Queries, which runs on the pool or inside a
// transaction alike (River's driver pattern).
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Errors callers can test with errors.Is: the domain's own
// (pkg/ratelimit/errors.go), which interpretError maps PostgreSQL's errors
// to by SQLSTATE.
var (
	ErrNotFound           = ratelimit.ErrNotFound
	ErrConflict           = ratelimit.ErrConflict
	ErrPreconditionFailed = ratelimit.ErrPreconditionFailed
	ErrInvalid            = ratelimit.ErrInvalid
)

// DBTX is what Queries needs: a pool, a connection or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Queries holds every query of the store, bound to one DBTX.
type Queries struct {
	db DBTX
}

// Store is the pool plus the queries bound to it.
type Store struct {
	*Queries
	pool *pgxpool.Pool
}

// Opts tunes Open. Zero values take the defaults.
type Opts struct {
	// MaxConns caps the pool (default 16: enough to keep two cores busy
	// without PostgreSQL thrashing on connection switches).
	MaxConns int32
	// ApplicationName shows in pg_stat_activity.
	ApplicationName string
}

// Open connects to dsn and checks the connection.
func Open(ctx context.Context, dsn string, opts Opts) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", redactErr(err))
	}
	// pool_max_conns in the URL wins; otherwise 16.
	if !strings.Contains(dsn, "pool_max_conns") {
		cfg.MaxConns = 16
	}
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	if opts.ApplicationName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = opts.ApplicationName
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	return New(pool), nil
}

// New wraps an existing pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{Queries: &Queries{db: pool}, pool: pool}
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Pool exposes the pool for packages that own their SQL on purpose (the
// enforcement counters) and for pool statistics.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// ReadTx runs fn in one read-only REPEATABLE READ transaction: every query
// in it sees the same committed state (a consistent snapshot).
func (s *Store) ReadTx(ctx context.Context, fn func(q *Queries) error) error {
	return interpretError(pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error { return fn(&Queries{db: tx}) }))
}

// InTx runs fn in one transaction: committed when fn returns nil, rolled back
// otherwise.
func (s *Store) InTx(ctx context.Context, fn func(q *Queries) error) error {
	// interpretError: a failure to begin or commit (a connection refused,
	// lost, or a server shutting down) is named like a query's.
	return interpretError(pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return fn(&Queries{db: tx})
	}))
}

// lock takes a transaction-scoped advisory lock on one resource. Every write
// of a definition, membership or admin takes it first, so the read of the
// before-image, the version check and the write see no concurrent writer, and
// a quarantine and an admin grant for the same subject cannot interleave.
//
// Per-row writes also hold the apply key shared, which an apply takes
// exclusively: a row write then either finishes before an apply starts or
// starts after it commits, and can never read the state before an apply
// and write over the state after it.
func (q *Queries) lock(ctx context.Context, kind, id string) error {
	if kind == ApplyLockKind {
		_, err := q.db.Exec(ctx, `select pg_advisory_xact_lock(hashtext($1), hashtext($2))`, kind, id)
		return interpretError(err)
	}
	_, err := q.db.Exec(ctx, `select pg_advisory_xact_lock_shared(hashtext($3), hashtext('')),
		pg_advisory_xact_lock(hashtext($1), hashtext($2))`, kind, id, ApplyLockKind)
	return interpretError(err)
}

// interpretError maps PostgreSQL errors to the package's sentinels, keeping
// the server's message for constraint failures, and a database that cannot
// answer (by SQLSTATE and error type: see AsUnavailable) to an
// *UnavailableError.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	if ue := AsUnavailable(err); ue != nil {
		return ue
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "22021", "22P05": // character_not_in_repertoire (NUL, invalid UTF-8), untranslatable_character
			return fmt.Errorf("%w: %s", ErrInvalid, pgErr.Message)
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", ErrConflict, pgErr.Detail)
		case "23514", "23502", "23503", "22001": // check, not null, foreign key, string too long
			return fmt.Errorf("%w: %s (%s)", ErrInvalid, pgErr.Message, pgErr.ConstraintName)
		}
		return fmt.Errorf("database: %s (SQLSTATE %s)", pgErr.Message, pgErr.Code)
	}
	return err
}

// redactErr drops a DSN's password from a parse error.
func redactErr(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("invalid database url (details withheld: they may contain a password)")
	}
	return err
}
