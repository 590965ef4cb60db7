package enforce_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestExactAcrossReplicas runs 4 Enforcers, each with its own pool, with 32
// goroutines each, against one limit: exactly the limit is allowed, however
// the calls interleave. With three gates of different limits, the allowed
// count is the smallest, and no counter ever exceeds its limit.
func TestExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	put := func(d ratelimit.Definition) {
		d.Mode = ratelimit.ModeEnforce
		if err := st.InTx(ctx, func(q *store.Queries) error { _, err := q.PutDefinition(ctx, d, store.Write{}); return err }); err != nil {
			t.Fatal(err)
		}
	}
	put(target("mcp_server", "one", 3600, 100))
	put(callerGroup("g", 3600, ptr(150), nil))
	put(callerGroup("solo-group", 3600, ptr(60), nil))
	put(target("mcp_server", "three", 3600, 120))
	put(serverGroup("sg", 3600, 90, "three"))
	for _, u := range []string{"u0", "u1", "u2", "u3", "solo"} {
		group := "g"
		if u == "solo" {
			group = "solo-group"
		}
		if err := st.InTx(ctx, func(q *store.Queries) error {
			_, err := q.PutMembership(ctx, ratelimit.Membership{SubjectType: "user", Subject: u, Groups: []string{group}}, store.Write{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	var replicas []*enforce.Enforcer
	for range 4 {
		e, err := postgres.Open(ctx, dsn, enforce.Options{MaxConns: 8, SweepInterval: -1,
			// Exactness, not latency, is under test: 128 goroutines on one
			// hot row under the race detector must not fail open.
			BackendTimeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		replicas = append(replicas, e)
	}
	run := func(server string, calls int, users ...string) int64 {
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for r, e := range replicas {
			for g := range 32 {
				wg.Go(func() {
					for range calls {
						d, err := e.Check(ctx, user(users[(r+g)%len(users)], server))
						if err != nil {
							t.Errorf("check: %v", err)
							return
						}
						if d.Allowed {
							allowed.Add(1)
						}
					}
				})
			}
		}
		wg.Wait()
		return allowed.Load()
	}
	if got := run("one", 2, "u0", "u1", "u2", "u3"); got != 100 {
		t.Errorf("one limit of 100, 256 calls from 4 replicas: %d allowed, want exactly 100", got)
	}
	// Three gates on "three" for one caller: caller 60, target 120, server
	// group 90. The smallest is the caller's 60.
	if got := run("three", 2, "solo"); got != 60 {
		t.Errorf("three gates: %d allowed, want 60 (the smallest limit)", got)
	}
	var over int
	if err := st.Pool().QueryRow(ctx, `select count(*) from rl_counters c where
		(c.key like 't|target:mcp_server:one:%' and c.count > 100) or
		(c.key like 'c|%|user:u_' and c.count > 150) or
		(c.key like 'c|%|user:solo' and c.count > 60) or
		(c.key like 't|target:mcp_server:three:%' and c.count > 120) or
		(c.key like 't|target:server_group:sg:%' and c.count > 90)`).Scan(&over); err != nil {
		t.Fatal(err)
	}
	if over != 0 {
		t.Errorf("%d counters exceed their limit", over)
	}
}

// TestExactWithOneCallPerRoundTrip is the same guarantee on the one-call
// path of rl_take: many replicas, each sending one decision at a time, race
// on one limit; every race lost between the read and the lock must be
// given back.
func TestExactWithOneCallPerRoundTrip(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, store.Opts{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := target("mcp_server", "hot", 3600, 100)
	d.Mode = ratelimit.ModeEnforce
	if err := st.InTx(ctx, func(q *store.Queries) error { _, err := q.PutDefinition(ctx, d, store.Write{}); return err }); err != nil {
		t.Fatal(err)
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	// One instant for every replica: an hour's window that turned during
	// the run would split the calls over two counters.
	at := time.Now()
	for range 8 {
		e, err := postgres.Open(ctx, dsn, enforce.Options{MaxConns: 3, Workers: 1, SweepInterval: -1, BackendTimeout: time.Minute,
			Now: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		wg.Go(func() {
			for range 25 {
				d, err := e.Check(ctx, user("u", "hot"))
				if err != nil {
					t.Errorf("check: %v", err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 100 {
		t.Errorf("200 calls one at a time from 8 replicas on a limit of 100: %d allowed", got)
	}
	var count int64
	if err := st.Pool().QueryRow(ctx, `select count from rl_counters where key like 't|target:mcp_server:hot:%'`).Scan(&count); err != nil {
		t.Fatal(err)
	}
	if count != 100 {
		t.Errorf("counter = %d, want 100", count)
	}
}
