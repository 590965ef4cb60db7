package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestReadersAreNotBlockedByAnApplyThatQuarantinesMany: while an apply
// that quarantines 1,200 callers (more than the 512 that used to make it
// lock rl_memberships and rl_admins outright) is running, GETs of a
// membership, a caller's status, the admins, the quarantine list and the
// memberships list all answer, with the state from before the apply; once
// the apply ends, its result is all there.
//
// To hold the apply mid-run without timing, a transaction outside the API
// holds a write lock on rl_definitions (as a hand-written UPDATE in flight
// would): the apply waits for it in LockForApply, after its other locks.
// The deadlines only catch a hang.
func TestReadersAreNotBlockedByAnApplyThatQuarantinesMany(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	const n = 1200
	now := time.Now()
	seed := make([]ratelimit.Membership, n)
	for i := range seed {
		seed[i] = ratelimit.Membership{SubjectType: "user", Subject: fmt.Sprintf("u%04d", i), Groups: []string{"g"},
			CreatedAt: &now, UpdatedAt: &now, Version: 1}
	}
	if err := env.Store.InTx(ctx, func(q *store.Queries) error { return q.InsertMemberships(ctx, seed) }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "root"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	hold, err := env.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `lock table rl_definitions in row exclusive mode`); err != nil {
		t.Fatal(err)
	}

	state := client.State{Memberships: make([]ratelimit.Membership, n)}
	for i := range state.Memberships {
		state.Memberships[i] = ratelimit.Membership{SubjectType: "user", Subject: fmt.Sprintf("u%04d", i),
			Groups: []string{"g", ratelimit.GroupQuarantineCallers}}
	}
	type outcome struct {
		res client.ApplyResult
		err error
	}
	applied := make(chan outcome, 1)
	go func() {
		res, err := c.Apply(ctx, state, client.ApplyOptions{Quarantine: true})
		applied <- outcome{res, err}
	}()

	// Wait until the apply is inside its transaction, waiting for the lock.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := env.Store.Pool().QueryRow(ctx, `select count(*) from pg_locks l join pg_class c on c.oid = l.relation
			where c.relname = 'rl_definitions' and not l.granted`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		select {
		case o := <-applied:
			t.Fatalf("apply finished while it should wait for the lock: %+v, %v", o.res, o.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the apply never reached its lock")
		}
		time.Sleep(5 * time.Millisecond)
	}

	reads := []struct {
		name string
		get  func(ctx context.Context) error
	}{
		{"GET membership", func(ctx context.Context) error {
			m, err := c.GetMembership(ctx, "user:u0007")
			if err == nil && m.HasGroup(ratelimit.GroupQuarantineCallers) {
				err = fmt.Errorf("membership shows the apply's uncommitted quarantine: %+v", m)
			}
			return err
		}},
		{"GET status", func(ctx context.Context) error {
			st, err := c.Status(ctx, client.StatusQuery{Username: "u0007"})
			if err == nil && len(st.Groups) != 1 {
				err = fmt.Errorf("status groups = %v, want [g]", st.Groups)
			}
			return err
		}},
		{"GET admins", func(ctx context.Context) error {
			admins, err := c.ListAdmins(ctx)
			if err == nil && len(admins) != 1 {
				err = fmt.Errorf("admins = %+v, want root", admins)
			}
			return err
		}},
		{"GET memberships", func(ctx context.Context) error {
			page, err := c.ListMemberships(ctx, client.MembershipFilter{Group: "g", Limit: 10})
			if err == nil && len(page.Memberships) != 10 {
				err = fmt.Errorf("memberships page has %d items, want 10", len(page.Memberships))
			}
			return err
		}},
		{"GET quarantine", func(ctx context.Context) error {
			q, err := c.ListQuarantine(ctx)
			if err == nil && len(q.Callers) != 0 {
				err = fmt.Errorf("quarantine lists %d callers before the apply committed", len(q.Callers))
			}
			return err
		}},
	}
	for _, r := range reads {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.get(rctx)
		cancel()
		if err != nil {
			t.Errorf("%s while an apply quarantining %d callers runs: %v", r.name, n, err)
		}
	}

	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-applied:
	case <-time.After(time.Minute):
		t.Fatal("apply did not finish a minute after the lock was released")
	}
	// The memberships' own groups stay [g]: every change is a quarantine.
	if o.err != nil || o.res.Quarantined != n {
		t.Fatalf("apply = %d quarantined, %v; want %d quarantined", o.res.Quarantined, o.err, n)
	}
	q, err := c.ListQuarantine(ctx)
	if err != nil || len(q.Callers) != n {
		t.Fatalf("after the apply: %d quarantined callers, %v; want %d", len(q.Callers), err, n)
	}
}
