package enforcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestSourceCapabilities checks a definitions source's declarations
// against its methods, on a source open builds (it may be written to: it
// locks a user out). A capability it declares works: LockOut quarantines
// the user until the lockout's end, and Load then holds the quarantine;
// CountQuarantined counts it. One it does not declare answers an error
// wrapping enforce.ErrNotImplemented and writes nothing. LoadTables, which
// every source has, answers a whole table and rows by id.
func TestSourceCapabilities(t *testing.T, open func(t *testing.T) enforce.Source) {
	t.Helper()
	src := open(t)
	ctx := context.Background()
	caps := src.Capabilities()
	if again := src.Capabilities(); again != caps {
		t.Fatalf("Capabilities changed between calls: %+v, then %+v", caps, again)
	}
	now := time.Now().UTC().Truncate(time.Second)
	const user = "enforcetest-locked-out"
	l := enforce.Lockout{SubjectType: ratelimit.SubjectUser, Subject: user, Now: now, Until: now.Add(time.Hour),
		Definition: "d", Count: 1, Reason: enforce.LockoutReasonPrefix + "enforcetest"}
	applied, err := src.LockOut(ctx, l)
	st, lerr := src.Load(ctx)
	if lerr != nil {
		t.Fatalf("Load: %v", lerr)
	}
	var held *ratelimit.Membership
	for i, m := range st.Memberships {
		if m.SubjectType == ratelimit.SubjectUser && m.Subject == user {
			held = &st.Memberships[i]
		}
	}
	switch {
	case caps.LockOut && (err != nil || !applied):
		t.Errorf("declares LockOut, LockOut: applied %v, %v; want applied", applied, err)
	case caps.LockOut && (held == nil || held.QuarantineExpiresAt == nil || !held.QuarantineExpiresAt.Equal(l.Until)):
		t.Errorf("declares LockOut, and Load then holds %+v for the user, want a quarantine until %s", held, l.Until)
	case !caps.LockOut && !errors.Is(err, enforce.ErrNotImplemented):
		t.Errorf("does not declare LockOut, LockOut answered %v, want an error wrapping enforce.ErrNotImplemented", err)
	case !caps.LockOut && held != nil:
		t.Errorf("does not declare LockOut, yet Load holds %+v for the user", held)
	}

	callers, _, err := src.CountQuarantined(ctx, now)
	switch {
	case caps.CountQuarantined && err != nil:
		t.Errorf("declares CountQuarantined, CountQuarantined: %v", err)
	case caps.CountQuarantined && caps.LockOut && callers < 1:
		t.Errorf("declares CountQuarantined: %d callers quarantined after a lockout, want at least 1", callers)
	case !caps.CountQuarantined && !errors.Is(err, enforce.ErrNotImplemented):
		t.Errorf("does not declare CountQuarantined, CountQuarantined answered %v, want an error wrapping enforce.ErrNotImplemented", err)
	}

	if len(st.Definitions) == 0 {
		t.Fatal("the source holds no definitions: open must give it at least one")
	}
	rows, err := src.LoadTables(ctx, enforce.TablesRequest{AllDefinitions: true, Memberships: []string{ratelimit.SubjectUser + ":nobody"}})
	if err != nil || len(rows.Definitions) != len(st.Definitions) || len(rows.Memberships) != 0 || len(rows.Admins) != 0 {
		t.Errorf("LoadTables of every definition and one absent member: %d definitions, %d members, %d admins, %v; want %d, 0, 0",
			len(rows.Definitions), len(rows.Memberships), len(rows.Admins), err, len(st.Definitions))
	}
	id := st.Definitions[0].ID
	rows, err = src.LoadTables(ctx, enforce.TablesRequest{Definitions: []string{id}})
	if err != nil || len(rows.Definitions) != 1 || rows.Definitions[0].ID != id {
		t.Errorf("LoadTables of definition %q: %+v, %v; want it alone", id, rows.Definitions, err)
	}
}
