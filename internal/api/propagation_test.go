package api_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestChangesReachAReplicaRowByRow: every kind of change made through
// rlapi (create, update and delete of memberships, definitions and admins,
// caller and target quarantine and their release) reaches another
// Enforcer, on its own pool, through its change listener; and the reload
// each change causes reads only the rows it changed, not the 3,000
// memberships stored.
func TestChangesReachAReplicaRowByRow(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	const stored = 3000
	seed := make([]ratelimit.Membership, stored)
	now := time.Now()
	for i := range seed {
		seed[i] = ratelimit.Membership{SubjectType: "client", Subject: fmt.Sprintf("bot-%04d", i), Groups: []string{"g"},
			CreatedAt: &now, UpdatedAt: &now, Version: 1}
	}
	if err := env.Store.InTx(ctx, func(q *store.Queries) error { return q.InsertMemberships(ctx, seed) }); err != nil {
		t.Fatal(err)
	}
	for _, d := range []ratelimit.Definition{group("g", 3600, 50, 50), group("h", 3600, 90, 90)} {
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "carol", Groups: []string{"g"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	replica, err := postgres.Open(ctx, env.Store.Pool().Config().ConnString(), enforce.Options{CacheTTL: time.Hour, SweepInterval: -1, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	// New loads everything, and so does the listener once it is connected
	// (changes made before it listened would be lost otherwise).
	hang := time.Now().Add(30 * time.Second)
	for replica.ReloadStats().Full < 2 {
		if time.Now().After(hang) {
			t.Fatal("the replica's listener never connected")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := replica.ReloadStats().Memberships; got < 2*stored {
		t.Fatalf("two whole loads read %d memberships, want at least %d", got, 2*stored)
	}

	peek := func(username, server string) enforce.Decision {
		d, _ := replica.Peek(ctx, enforce.Call{Username: username, TargetType: "mcp_server", TargetName: server})
		return d
	}
	limitIs := func(n int64) func(enforce.Decision) bool {
		return func(d enforce.Decision) bool { return d.Allowed && d.Limit == n }
	}
	quarantined := func(d enforce.Decision) bool { return d.Reason == enforce.ReasonQuarantined }

	steps := []struct {
		name   string
		change func() error
		user   string
		server string
		want   func(enforce.Decision) bool
		// rows the reload may read, by table
		defs, members, admins uint64
	}{
		{"create a membership", func() error {
			_, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"g"}}, client.WriteOptions{})
			return err
		}, "alice", "s", limitIs(50), 0, 1, 0},
		{"update it", func() error {
			_, err := c.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"h"}}, client.WriteOptions{})
			return err
		}, "alice", "s", limitIs(90), 0, 1, 0},
		{"delete it", func() error {
			_, err := c.DeleteMembership(ctx, "user:alice", client.WriteOptions{})
			return err
		}, "alice", "s", limitIs(0), 0, 1, 0},
		{"quarantine a caller", func() error {
			_, err := c.Quarantine(ctx, "user", "alice", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{})
			return err
		}, "alice", "s", quarantined, 0, 1, 0},
		{"release it", func() error {
			_, _, err := c.Unquarantine(ctx, "user", "alice", client.WriteOptions{})
			return err
		}, "alice", "s", limitIs(0), 0, 1, 0},
		{"quarantine a target", func() error {
			_, err := c.Quarantine(ctx, "server", "mcpgw", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{})
			return err
		}, "bob", "mcpgw", quarantined, 0, 1, 0},
		{"release it", func() error {
			_, _, err := c.Unquarantine(ctx, "server", "mcpgw", client.WriteOptions{})
			return err
		}, "bob", "mcpgw", limitIs(0), 0, 1, 0},
		{"create a definition", func() error {
			_, err := c.PutDefinition(ctx, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "mcpgw",
				WindowSeconds: 60, MaxRequests: ptr(7), Enabled: true}, client.WriteOptions{})
			return err
		}, "bob", "mcpgw", limitIs(7), 1, 0, 0},
		{"update it", func() error {
			_, err := c.PutDefinition(ctx, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "mcpgw",
				WindowSeconds: 60, MaxRequests: ptr(8), Enabled: true}, client.WriteOptions{})
			return err
		}, "bob", "mcpgw", limitIs(8), 1, 0, 0},
		{"delete it", func() error {
			_, err := c.DeleteDefinition(ctx, "target:mcp_server:mcpgw:60", client.WriteOptions{})
			return err
		}, "bob", "mcpgw", limitIs(0), 1, 0, 0},
		// An administrator bypasses caller limits: carol's limit of 50 goes.
		{"grant an admin", func() error {
			_, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: "carol"}, client.WriteOptions{})
			return err
		}, "carol", "s", limitIs(0), 0, 0, 1},
		{"revoke it", func() error {
			_, err := c.DeleteAdmin(ctx, "user", "carol", client.WriteOptions{})
			return err
		}, "carol", "s", limitIs(50), 0, 0, 1},
		{"quarantine another caller", func() error {
			_, err := c.Quarantine(ctx, "user", "dave", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{})
			return err
		}, "dave", "s", quarantined, 0, 1, 0},
		{"turn caller quarantine off", func() error {
			_, _, err := c.SetDefinitionEnabled(ctx, ratelimit.SentinelCallers, false, client.WriteOptions{})
			return err
		}, "dave", "s", limitIs(0), 1, 0, 0},
		{"and on again", func() error {
			_, _, err := c.SetDefinitionEnabled(ctx, ratelimit.SentinelCallers, true, client.WriteOptions{})
			return err
		}, "dave", "s", quarantined, 1, 0, 0},
	}
	for _, s := range steps {
		before := replica.ReloadStats()
		if err := s.change(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		acked := time.Now()
		for d := peek(s.user, s.server); !s.want(d); d = peek(s.user, s.server) {
			if time.Since(acked) > 10*time.Second {
				t.Fatalf("%s: not enforced by the replica 10 s after the API answered (decision %+v)", s.name, d)
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Logf("%s: enforced by the replica %v after the API answered", s.name, time.Since(acked).Round(100*time.Microsecond))
		// The notification that made the decision change has been read;
		// wait for a reload that read its rows to be counted.
		after := replica.ReloadStats()
		if after.Full != before.Full {
			t.Errorf("%s: %d whole reloads, want none", s.name, after.Full-before.Full)
		}
		if d, m, a := after.Definitions-before.Definitions, after.Memberships-before.Memberships, after.Admins-before.Admins; d > s.defs || m > s.members || a > s.admins {
			t.Errorf("%s: the replica read %d definitions, %d memberships, %d admins; want at most %d, %d, %d (of %d memberships stored)",
				s.name, d, m, a, s.defs, s.members, s.admins, stored+1)
		}
	}
}
