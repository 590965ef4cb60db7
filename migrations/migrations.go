// Package migrations holds the SQL schema as numbered files, embedded in the
// binaries so `rlapi migrate` needs nothing beside itself. Never edit a file
// that has landed: fix forward with a new number.
package migrations

import "embed"

// FS holds the migration files, NNN_name.sql, each with its rollback below a
// "---- create above / drop below ----" line (tern's format), and under
// shared/ the tern templates they include ({{ template "shared/x.sql" . }}):
// function bodies that one migration creates and a later one's rollback
// restores.
//
//go:embed *.sql shared/*.sql
var FS embed.FS
