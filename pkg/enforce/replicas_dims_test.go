package enforce_test

import (
	"context"
	"fmt"
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

// TestExactAcrossReplicasPerIPTeamShared is TestExactAcrossReplicas for
// the buckets that are not one caller's, with every algorithm: 4
// Enforcers with their own pools, 32 goroutines each, on PostgreSQL. A
// bucket per IPv6 /64 drawn on by users, agents and anonymous callers
// from many addresses of the /64, a bucket per team drawn on by every
// member, and one shared bucket drawn on by every member of a group each
// admit exactly their limit. The replicas share one fixed clock, so no
// window turns and no token refills while they race.
func TestExactAcrossReplicasPerIPTeamShared(t *testing.T) {
	t.Parallel()
	for _, algo := range ratelimit.Algorithms() {
		t.Run(algo, func(t *testing.T) {
			t.Parallel()
			dsn := pgtest.NewMigratedDatabase(t)
			ctx := context.Background()
			st, err := store.Open(ctx, dsn, store.Opts{MaxConns: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			put := func(d ratelimit.Definition) {
				d.Mode, d.Algorithm = ratelimit.ModeEnforce, algo
				if err := st.InTx(ctx, func(q *store.Queries) error { _, err := q.PutDefinition(ctx, d, store.Write{}); return err }); err != nil {
					t.Fatal(err)
				}
			}
			member := func(subjectType, subject, group string) {
				if err := st.InTx(ctx, func(q *store.Queries) error {
					_, err := q.PutMembership(ctx, ratelimit.Membership{SubjectType: subjectType, Subject: subject, Groups: []string{group}}, store.Write{})
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			put(everyone(callerGroup("per-ip", 3600, ptr(70), ptr(70)), ratelimit.PerIP))
			put(withPer(callerGroup("tenants", 3600, ptr(50), ptr(50)), ratelimit.PerTeam))
			put(withPer(callerGroup("pool", 3600, ptr(90), nil), ratelimit.PerShared))
			member(ratelimit.SubjectTeam, "acme", "tenants")
			for _, u := range []string{"p0", "p1", "p2", "p3", "p4"} {
				member(ratelimit.SubjectUser, u, "pool")
			}
			now := time.Date(2026, 3, 2, 0, 0, 10, 0, time.UTC)
			var replicas []*enforce.Enforcer
			for range 4 {
				e, err := postgres.Open(ctx, dsn, enforce.Options{MaxConns: 8, SweepInterval: -1, BackendTimeout: time.Minute,
					Now: func() time.Time { return now }, CacheTTL: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				replicas = append(replicas, e)
			}
			run := func(call func(r, g, i int) enforce.Call) int64 {
				var allowed atomic.Int64
				var wg sync.WaitGroup
				for r, e := range replicas {
					for g := range 32 {
						wg.Go(func() {
							for i := range 2 {
								d, err := e.Check(ctx, call(r, g, i))
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
			// Per /64: users, agents and anonymous callers from 256
			// addresses of one /64.
			got := run(func(r, g, i int) enforce.Call {
				ip := fmt.Sprintf("2001:db8:7:7::%x", r*64+g*2+i+1)
				switch g % 3 {
				case 0:
					return anonymous(ip)
				case 1:
					return from(agent(fmt.Sprintf("bot%d", r), "srv"), ip)
				}
				return from(user(fmt.Sprintf("u%d", g), "srv"), ip)
			})
			if got != 70 {
				t.Errorf("per IP: 256 calls from one /64 through 4 replicas: %d allowed, want exactly 70", got)
			}
			// Per team: 32 different callers of team acme.
			if got := run(func(r, g, i int) enforce.Call { return inTeam(user(fmt.Sprintf("m%d", g), "srv"), "acme") }); got != 50 {
				t.Errorf("per team: 256 calls of team acme: %d allowed, want exactly 50", got)
			}
			// Shared: the pool's five members.
			if got := run(func(r, g, i int) enforce.Call { return user(fmt.Sprintf("p%d", (r+g)%5), "srv") }); got != 90 {
				t.Errorf("shared: 256 calls of the pool's members: %d allowed, want exactly 90", got)
			}
			if algo == ratelimit.AlgorithmTokenBucket {
				return // a token bucket's row holds its TAT, not a count
			}
			var over int
			if err := st.Pool().QueryRow(ctx, `select count(*) from rl_counters c where
				(c.key like 'p%|caller:group:per-ip:%' and c.count > 70) or
				(c.key like 'p%|caller:group:tenants:%' and c.count > 50) or
				(c.key like 'p%|caller:group:pool:%' and c.count > 90)`).Scan(&over); err != nil {
				t.Fatal(err)
			}
			if over != 0 {
				t.Errorf("%d counters exceed their limit", over)
			}
		})
	}
}
