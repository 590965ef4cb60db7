// Package source is the definitions-source seam of pkg/enforce: what a
// source of definitions, memberships and administrators must do for an
// Enforcer (Source), and the values it answers with. pkg/enforce/postgres
// (LISTEN/NOTIFY over the rlctl database) and pkg/enforce/filesource (a
// YAML file) implement it; pkg/enforce re-exports every name here, so
// gateways write enforce.Source, enforce.State and so on.
package source

import (
	"context"
	"slices"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// State is everything a definitions source knows: what the Enforcer
// builds its snapshot from.
type State struct {
	Definitions []ratelimit.Definition
	Memberships []ratelimit.Membership
	Admins      []ratelimit.Admin
	// EnforcementOff is the master switch: every call allowed, nothing
	// counted.
	EnforcementOff bool
}

// Tables a Change names.
const (
	TableDefinitions = "definitions"
	TableMemberships = "memberships"
	TableAdmins      = "admins"
	TableSettings    = "settings"
	// TableAuthLockouts: failed-credential lockouts were lifted in the
	// counter store. IDs are <scope>|<address key> (rlapi|203.0.113.7);
	// the Enforcer tells its Guard (enforce.Guard.Changed), which forgets what it
	// cached of them (nothing is reloaded), All every address.
	TableAuthLockouts = "auth_lockouts"
)

// Change is one change notice: these rows of one table may have changed.
// All (or an empty Table) widens it to the whole table (or to
// everything).
type Change struct {
	Table string
	// IDs are definition ids, or <subject_type>:<subject> for memberships
	// and admins.
	IDs []string
	All bool
}

// Rows is what a source read for a set of changes: the rows that exist
// now among those asked for. An id asked for and absent here was deleted.
type Rows struct {
	Definitions []ratelimit.Definition
	Memberships []ratelimit.Membership
	Admins      []ratelimit.Admin
	// EnforcementOff is read with every load (one row).
	EnforcementOff bool
}

// TablesRequest names what a reload reads: per table, every row (All...)
// or the rows with the ids listed.
type TablesRequest struct {
	AllDefinitions, AllMemberships, AllAdmins bool
	Definitions, Memberships, Admins          []string
}

// Source says what to count. Every method is mandatory; writing lockouts
// and counting quarantines are capabilities a source declares
// (Capabilities), answering enforce.ErrNotImplemented (wrapped) from the
// method when it lacks one. pkg/enforce/escalation's New refuses a source that
// does not declare LockOut.
type Source interface {
	// Load reads everything, consistently (one snapshot of the source).
	Load(ctx context.Context) (State, error)
	// LoadTables reads, in one consistent read, the tables req marks whole
	// and the rows it names by id of the others (definition ids, and
	// <subject_type>:<subject> for memberships and admins): what the
	// Enforcer reads after change notices. Every source can: one that
	// holds its state in memory answers SelectRows(state, req); one over
	// a database reads only what req names (pkg/enforce/postgres: a
	// 100-row apply of definitions does not read 100,000 memberships).
	LoadTables(ctx context.Context, req TablesRequest) (Rows, error)
	// Watch delivers change notices until ctx ends or the stream breaks;
	// notices sent while nobody watched are lost, so the Enforcer reloads
	// everything whenever Watch (re)starts: ready is called once the
	// stream is established.
	Watch(ctx context.Context, ready func(), notify func(Change)) error
	// LockOut writes an escalation lockout: it quarantines the caller
	// until l.Until, unless it is an administrator or already quarantined
	// at least as long, and reports whether it did. The lockout reaches
	// every replica through the source's change notices. Capability:
	// LockOut.
	LockOut(ctx context.Context, l Lockout) (applied bool, err error)
	// CountQuarantined counts the subjects quarantined at now, in the
	// source itself (pkg/enforce/postgres asks the database at scrape
	// time, so every replica reports the same). Capability:
	// CountQuarantined; without it the gauge
	// rlctl_enforce_quarantined_subjects is counted from the Enforcer's
	// snapshot, which holds the same rows.
	CountQuarantined(ctx context.Context, now time.Time) (callers, targets int64, err error)
	// Capabilities declares what of the methods above the source can do.
	// It is constant for a source's life.
	Capabilities() SourceCapabilities
}

// SourceCapabilities are what a definitions source declares it can do
// beside Load, LoadTables and Watch, which every source can.
type SourceCapabilities struct {
	// LockOut: LockOut writes escalation lockouts. Escalation needs it
	// (pkg/enforce/postgres's source has it; a YAML file cannot be
	// written).
	LockOut bool
	// CountQuarantined: CountQuarantined counts in the source.
	CountQuarantined bool
}

// Lockout is one escalation lockout (Source.LockOut).
type Lockout struct {
	// SubjectType is user, client or network (an anonymous caller's
	// address: its /32 or IPv6 prefix, masked CIDR), Subject its name.
	SubjectType, Subject string
	Until, Now           time.Time
	// Definition is the definition of the violation that reached the
	// count, Count the count, Reason the quarantine's reason.
	Definition string
	Count      int
	Reason     string
}

// SelectRows picks from st what req names: the whole tables it marks, the
// rows it lists by id of the others (a definition without an id is
// matched by its Key). It is LoadTables for a source that holds its state
// in memory.
func SelectRows(st State, req TablesRequest) Rows {
	rows := Rows{EnforcementOff: st.EnforcementOff}
	for _, d := range st.Definitions {
		if req.AllDefinitions || slices.Contains(req.Definitions, d.ID) || (d.ID == "" && slices.Contains(req.Definitions, d.Key())) {
			rows.Definitions = append(rows.Definitions, d)
		}
	}
	for _, m := range st.Memberships {
		if req.AllMemberships || slices.Contains(req.Memberships, m.Key()) {
			rows.Memberships = append(rows.Memberships, m)
		}
	}
	for _, a := range st.Admins {
		if req.AllAdmins || slices.Contains(req.Admins, a.Key()) {
			rows.Admins = append(rows.Admins, a)
		}
	}
	return rows
}
