package store

import (
	"context"
	"fmt"

	"github.com/jackc/tern/v2/migrate"

	"github.com/rlctl/rlctl/migrations"
)

// versionTable records the applied migration number (tern's bookkeeping).
const versionTable = "rl_schema_version"

// SchemaStatus says how far the database's schema is from this binary's.
type SchemaStatus struct {
	Current int32 // applied migrations
	Latest  int32 // migrations this binary carries
}

// Behind reports whether migrations are pending.
func (s SchemaStatus) Behind() bool { return s.Current < s.Latest }

// Migrate applies every pending migration. tern holds a session advisory lock
// while it works, so replicas started together migrate once.
func (s *Store) Migrate(ctx context.Context) (SchemaStatus, error) {
	var st SchemaStatus
	err := s.withMigrator(ctx, func(m *migrate.Migrator) error {
		if err := m.Migrate(ctx); err != nil {
			return err
		}
		return s.readStatus(ctx, m, &st)
	})
	return st, err
}

// MigrateTo moves the schema to version v, rolling back when v is below the
// current version (0 removes everything).
func (s *Store) MigrateTo(ctx context.Context, v int32) error {
	return s.withMigrator(ctx, func(m *migrate.Migrator) error {
		return m.MigrateTo(ctx, v)
	})
}

// Schema reports the applied and the latest migration numbers.
func (s *Store) Schema(ctx context.Context) (SchemaStatus, error) {
	var st SchemaStatus
	err := s.withMigrator(ctx, func(m *migrate.Migrator) error {
		return s.readStatus(ctx, m, &st)
	})
	return st, err
}

func (s *Store) readStatus(ctx context.Context, m *migrate.Migrator, st *SchemaStatus) error {
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return err
	}
	st.Current, st.Latest = cur, int32(len(m.Migrations))
	return nil
}

func (s *Store) withMigrator(ctx context.Context, fn func(*migrate.Migrator) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
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
