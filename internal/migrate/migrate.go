// Package migrate applies the embedded migrations (package migrations) to a
// database with tern. It is kept apart from internal/store so that what a
// gateway links (the store and its backends) carries neither tern nor sprig:
// only rlapi, its tests and the load programs migrate.
package migrate

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	tern "github.com/jackc/tern/v2/migrate"

	"github.com/rlctl/rlctl/migrations"
)

// versionTable records the applied migration number (tern's bookkeeping).
const versionTable = "rl_schema_version"

// Schema says how far the database's schema is from this binary's.
type Schema struct {
	Current int32 // applied migrations
	Latest  int32 // migrations this binary carries
}

// Behind reports whether migrations are pending.
func (s Schema) Behind() bool { return s.Current < s.Latest }

// Up applies every pending migration. tern holds a session advisory lock
// while it works, so replicas started together migrate once.
func Up(ctx context.Context, pool *pgxpool.Pool) (Schema, error) {
	var st Schema
	err := withMigrator(ctx, pool, func(m *tern.Migrator) error {
		if err := m.Migrate(ctx); err != nil {
			return err
		}
		return readStatus(ctx, m, &st)
	})
	return st, err
}

// To moves the schema to version v, rolling back when v is below the
// current version (0 removes everything).
func To(ctx context.Context, pool *pgxpool.Pool, v int32) error {
	return withMigrator(ctx, pool, func(m *tern.Migrator) error {
		return m.MigrateTo(ctx, v)
	})
}

// Status reports the applied and the latest migration numbers.
func Status(ctx context.Context, pool *pgxpool.Pool) (Schema, error) {
	var st Schema
	err := withMigrator(ctx, pool, func(m *tern.Migrator) error {
		return readStatus(ctx, m, &st)
	})
	return st, err
}

func readStatus(ctx context.Context, m *tern.Migrator, st *Schema) error {
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return err
	}
	st.Current, st.Latest = cur, int32(len(m.Migrations))
	return nil
}

func withMigrator(ctx context.Context, pool *pgxpool.Pool, fn func(*tern.Migrator) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	m, err := tern.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := m.LoadMigrations(migrations.FS); err != nil {
		return fmt.Errorf("load migrations: %w", err)
	}
	if err := fn(m); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
