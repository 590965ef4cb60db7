package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// inTx runs fn in a transaction of s and fails the test on error.
func inTx(t *testing.T, s *store.Store, fn func(ctx context.Context, q *store.Queries) error) {
	t.Helper()
	ctx := context.Background()
	if err := s.InTx(ctx, func(q *store.Queries) error { return fn(ctx, q) }); err != nil {
		t.Fatal(err)
	}
}

func TestBulkWritesRoundTrip(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	var now time.Time

	// Create: every kind, every column, with one COPY or statement each.
	inTx(t, s, func(ctx context.Context, q *store.Queries) error {
		var err error
		if now, err = q.TransactionTime(ctx); err != nil {
			return err
		}
		if err := q.LockForApply(ctx); err != nil {
			return err
		}
		var defs []ratelimit.Definition
		for i := range 300 {
			d := callerGroup(fmt.Sprintf("g%03d", i), 60, 100)
			d.CreatedAt, d.UpdatedAt, d.UpdatedBy, d.Version = &now, &now, "bulk", 1
			defs = append(defs, d)
		}
		defs = append(defs, ratelimit.Definition{Axis: "target", EntityType: "server_group", Name: "sg", WindowSeconds: 60,
			MaxRequests: ptr(5), Members: []string{"a", "b"}, Enabled: true, Mode: "shadow", Description: "d",
			CreatedAt: &now, UpdatedAt: &now, UpdatedBy: "bulk", Version: 1})
		if err := q.InsertDefinitions(ctx, defs); err != nil {
			return err
		}
		expires := now.Add(time.Hour)
		ms := []ratelimit.Membership{
			{SubjectType: "user", Subject: "alice", Groups: []string{"g001", "g002"}, CreatedAt: &now, UpdatedAt: &now, Version: 1},
			{SubjectType: "user", Subject: "mallory", Groups: []string{"quarantine-callers"}, QuarantineReason: "r",
				QuarantinedAt: &now, QuarantineExpiresAt: &expires, CreatedAt: &now, UpdatedAt: &now, Version: 1},
		}
		if err := q.InsertMemberships(ctx, ms); err != nil {
			return err
		}
		if err := q.InsertAdmins(ctx, []ratelimit.Admin{{SubjectType: "user", Subject: "carol", Note: "n", CreatedAt: &now, CreatedBy: "bulk"}}); err != nil {
			return err
		}
		return q.InsertAudits(ctx, []store.Audit{
			{Actor: "bulk", Action: "create", ResourceType: "definition", ResourceID: "x", After: defs[0], RequestID: "r1"},
			{Actor: "bulk", Action: "delete", ResourceType: "admin", ResourceID: "y", Before: ratelimit.Admin{Subject: "y"}},
		})
	})

	sg, err := s.GetDefinition(ctx, "target:server_group:sg:60")
	if err != nil || sg.Version != 1 || !slices.Equal(sg.Members, []string{"a", "b"}) || sg.Mode != "shadow" ||
		sg.UpdatedBy != "bulk" || !sg.CreatedAt.Equal(now) || *sg.MaxRequests != 5 {
		t.Errorf("server group = %+v, %v", sg, err)
	}
	g, _ := s.GetDefinition(ctx, "caller:group:g000:60")
	if g.Members != nil || g.MaxRequests != nil || *g.UserMaxRequests != 100 {
		t.Errorf("group = %+v", g)
	}
	m, err := s.GetMembership(ctx, "user", "mallory")
	if err != nil || m.QuarantinedAt == nil || !m.QuarantinedAt.Equal(now) || m.QuarantineExpiresAt == nil || m.Version != 1 {
		t.Errorf("membership = %+v, %v", m, err)
	}
	a, err := s.GetAdmin(ctx, "user", "carol")
	if err != nil || a.CreatedBy != "bulk" || a.Note != "n" {
		t.Errorf("admin = %+v, %v", a, err)
	}
	entries, err := s.ListAudit(ctx, store.AuditFilter{Actor: "bulk"})
	if err != nil || len(entries) != 2 {
		t.Fatalf("audit = %+v, %v", entries, err)
	}
	// Newest first: the delete, then the create. NULL stays NULL.
	if entries[0].After != nil || entries[0].Before == nil || entries[1].Before != nil || entries[1].After == nil ||
		entries[1].RequestID != "r1" || entries[1].ID >= entries[0].ID {
		t.Errorf("audit entries = %+v", entries)
	}

	// Update bumps versions by one and keeps created_at; delete removes.
	inTx(t, s, func(ctx context.Context, q *store.Queries) error {
		if err := q.LockForApply(ctx); err != nil {
			return err
		}
		later, _ := q.TransactionTime(ctx)
		g := callerGroup("g000", 60, 200)
		g.UpdatedAt, g.UpdatedBy, g.Enabled = &later, "second", false
		if err := q.UpdateDefinitions(ctx, []ratelimit.Definition{g}); err != nil {
			return err
		}
		alice := ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"g003"}, UpdatedAt: &later}
		if err := q.UpdateMemberships(ctx, []ratelimit.Membership{alice}); err != nil {
			return err
		}
		if err := q.UpdateAdmins(ctx, []ratelimit.Admin{{SubjectType: "user", Subject: "carol", Note: "changed"}}); err != nil {
			return err
		}
		if err := q.DeleteDefinitions(ctx, []string{"caller:group:g001:60", "caller:group:g002:60"}); err != nil {
			return err
		}
		if err := q.DeleteMemberships(ctx, []string{"user:mallory"}); err != nil {
			return err
		}
		return q.DeleteAdmins(ctx, []string{})
	})
	g, _ = s.GetDefinition(ctx, "caller:group:g000:60")
	if g.Version != 2 || *g.UserMaxRequests != 200 || g.Enabled || g.UpdatedBy != "second" || !g.CreatedAt.Equal(now) {
		t.Errorf("updated group = %+v", g)
	}
	if _, err := s.GetDefinition(ctx, "caller:group:g001:60"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted definition: %v", err)
	}
	m, _ = s.GetMembership(ctx, "user", "alice")
	if m.Version != 2 || !slices.Equal(m.Groups, []string{"g003"}) {
		t.Errorf("updated membership = %+v", m)
	}
	if _, err := s.GetMembership(ctx, "user", "mallory"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted membership: %v", err)
	}
	if a, _ := s.GetAdmin(ctx, "user", "carol"); a.Note != "changed" || a.CreatedBy != "bulk" {
		t.Errorf("updated admin = %+v", a)
	}
	c, _ := s.Count(ctx)
	if c.Definitions != 2+299 || c.Memberships != 1 || c.Admins != 1 {
		t.Errorf("counts = %+v", c)
	}
}

func TestBulkWritesRefuseWhatTheSchemaRefuses(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	tests := []struct {
		name string
		fn   func(q *store.Queries) error
		want error
	}{
		{"sentinel delete", func(q *store.Queries) error {
			return q.DeleteDefinitions(ctx, []string{ratelimit.SentinelCallers})
		}, store.ErrInvalid},
		{"check constraint in a COPY", func(q *store.Queries) error {
			now := time.Now()
			d := callerGroup("x", 60, 100)
			d.UserMaxRequests = ptr(0)
			d.CreatedAt, d.UpdatedAt, d.Version = &now, &now, 1
			return q.InsertDefinitions(ctx, []ratelimit.Definition{d})
		}, store.ErrInvalid},
		{"incomplete row", func(q *store.Queries) error {
			return q.InsertDefinitions(ctx, []ratelimit.Definition{callerGroup("x", 60, 100)}) // no times
		}, store.ErrInvalid},
		{"update of a missing row", func(q *store.Queries) error {
			now := time.Now()
			d := callerGroup("nobody", 60, 100)
			d.UpdatedAt = &now
			return q.UpdateDefinitions(ctx, []ratelimit.Definition{d})
		}, store.ErrConflict},
		{"delete of a missing row", func(q *store.Queries) error {
			return q.DeleteMemberships(ctx, []string{"user:nobody"})
		}, store.ErrConflict},
		{"duplicate insert", func(q *store.Queries) error {
			now := time.Now()
			d := ratelimit.Definition{Axis: "quarantine", EntityType: "group", Name: "quarantine-callers", WindowSeconds: 1,
				CreatedAt: &now, UpdatedAt: &now, Version: 1}
			return q.InsertDefinitions(ctx, []ratelimit.Definition{d})
		}, store.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.InTx(ctx, tt.fn)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// blocked runs fn in its own transaction and reports whether it was still
// waiting after a while; the returned function waits for it to finish.
func startBlocked(t *testing.T, s *store.Store, fn func(ctx context.Context, q *store.Queries) error) (stillWaiting bool, wait func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		done <- s.InTx(context.Background(), func(q *store.Queries) error { return fn(context.Background(), q) })
	}()
	select {
	case err := <-done:
		return false, func() error { return err }
	case <-time.After(300 * time.Millisecond):
		return true, func() error {
			select {
			case err := <-done:
				return err
			case <-time.After(10 * time.Second):
				return errors.New("still blocked 10 s after the apply ended")
			}
		}
	}
}

func TestLockForApplyKeepsWritersOut(t *testing.T) {
	t.Parallel()
	s := pgtest.NewStore(t)
	ctx := context.Background()
	if _, _, err := put(t, s, callerGroup("g", 60, 100), store.Write{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		other   func(ctx context.Context, q *store.Queries) error
		blocked bool
	}{
		{"another apply", func(ctx context.Context, q *store.Queries) error {
			return q.LockForApply(ctx)
		}, true},
		{"a per-row write", func(ctx context.Context, q *store.Queries) error {
			_, err := q.PutDefinition(ctx, callerGroup("g", 60, 300), store.Write{})
			return err
		}, true},
		// Every per-row write about a subject (membership, quarantine, admin
		// grant) holds the apply key shared, so it waits for a running
		// apply before its first read, whichever subjects the apply names.
		{"a write about a subject", func(ctx context.Context, q *store.Queries) error {
			return q.LockSubject(ctx, "user", "dave")
		}, true},
		// Readers are never blocked: not the definitions, not the
		// memberships and admins an apply quarantines or grants.
		{"a reader of definitions", func(ctx context.Context, q *store.Queries) error {
			_, err := q.AllDefinitions(ctx)
			return err
		}, false},
		{"a reader of memberships", func(ctx context.Context, q *store.Queries) error {
			_, err := q.AllMemberships(ctx)
			return err
		}, false},
		{"an admin check", func(ctx context.Context, q *store.Queries) error {
			_, err := q.IsAdmin(ctx, "user", "dave")
			return err
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			locked, release, applied := make(chan struct{}), make(chan struct{}), make(chan error, 1)
			go func() {
				applied <- s.InTx(ctx, func(q *store.Queries) error {
					if err := q.LockForApply(ctx); err != nil {
						return err
					}
					close(locked)
					<-release
					return nil
				})
			}()
			select {
			case <-locked:
			case err := <-applied:
				t.Fatalf("lock for apply: %v", err)
			}
			waiting, wait := startBlocked(t, s, tt.other)
			if waiting != tt.blocked {
				t.Errorf("blocked = %v while an apply holds its locks, want %v", waiting, tt.blocked)
			}
			close(release)
			if err := <-applied; err != nil {
				t.Fatal(err)
			}
			if err := wait(); err != nil {
				t.Errorf("after the apply: %v", err)
			}
		})
	}
}
