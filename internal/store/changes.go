package store

import (
	"encoding/json"
	"strings"
)

// ChangeChannel is the channel the triggers of migrations 001, 003 and 004
// notify on every write to definitions, memberships, admins or the
// master switch.
const ChangeChannel = "rlctl_changes"

// The tables a change notification can name.
const (
	TableDefinitions = "rl_definitions"
	TableMemberships = "rl_memberships"
	TableAdmins      = "rl_admins"
	// TableSettings holds the master switch (migration 003); its
	// notifications name the table alone.
	TableSettings = "rl_settings"
)

// Change is one notification on ChangeChannel: the rows one statement
// wrote. All means every row of Table may have changed (a statement of
// more than 64 rows, a TRUNCATE, or a notification this binary cannot
// read), and IDs is then nil. Table is empty when even the table is
// unknown: everything may have changed.
type Change struct {
	Table string
	IDs   []string // definition ids, or <subject_type>:<subject>
	All   bool
}

// ParseChange reads a notification's payload. It never fails: anything it
// cannot read widens to "the whole table" or "everything", which is always
// a correct (if slower) answer.
func ParseChange(payload string) Change {
	if !strings.HasPrefix(payload, "{") {
		// 001's payload: the table name alone (TRUNCATE still sends it).
		return knownTable(Change{Table: payload, All: true})
	}
	var p struct {
		Table string   `json:"table"`
		IDs   []string `json:"ids"`
	}
	if err := json.Unmarshal([]byte(payload), &p); err != nil {
		return Change{All: true}
	}
	return knownTable(Change{Table: p.Table, IDs: p.IDs, All: len(p.IDs) == 0})
}

func knownTable(c Change) Change {
	switch c.Table {
	case TableDefinitions, TableMemberships, TableAdmins:
		return c
	case TableSettings:
		return Change{Table: TableSettings, All: true}
	}
	return Change{All: true}
}
