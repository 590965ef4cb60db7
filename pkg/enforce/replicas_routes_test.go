package enforce_test

import (
	"context"
	"fmt"
	"strings"
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

// TestExactAcrossReplicasRouteTiers is TestExactAcrossReplicasPerIPTeamShared
// for route tiers, with every algorithm: 4 Enforcers with
// their own pools, 32 goroutines each, on PostgreSQL. A tier's bucket that
// every caller shares (max_requests), its bucket per client address (an
// IPv6 /64, drawn on from many addresses of it), per user, per agent and
// per team (every member of the team, from many addresses) each admit
// exactly their limit, and no counter row holds more. The replicas share
// one fixed clock, so no window turns and no token refills while they
// race.
func TestExactAcrossReplicasRouteTiers(t *testing.T) {
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
			limits := map[string]int{"pooled": 80, "per-ip": 70, "per-user": 60, "per-agent": 40, "per-team": 50}
			put := func(tier string, set func(d *ratelimit.Definition, n *int)) {
				d := route(tier, 3600, "/"+tier+"/*")
				d.Methods = []string{"POST"}
				d.Mode, d.Algorithm = ratelimit.ModeEnforce, algo
				set(&d, ptr(limits[tier]))
				if err := st.InTx(ctx, func(q *store.Queries) error { _, err := q.PutDefinition(ctx, d, store.Write{}); return err }); err != nil {
					t.Fatal(err)
				}
			}
			put("pooled", func(d *ratelimit.Definition, n *int) { d.MaxRequests = n })
			put("per-ip", func(d *ratelimit.Definition, n *int) { d.IPMaxRequests = n })
			put("per-user", func(d *ratelimit.Definition, n *int) { d.UserMaxRequests = n })
			put("per-agent", func(d *ratelimit.Definition, n *int) { d.AgentMaxRequests = n })
			put("per-team", func(d *ratelimit.Definition, n *int) { d.TeamMaxRequests = n })
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
			// n numbers the 256 calls of a run.
			n := func(r, g, i int) int { return r*64 + g*2 + i }
			for _, s := range []struct {
				tier string
				call func(r, g, i int) enforce.Call
			}{
				// Pooled: 256 users from 256 addresses.
				{"pooled", func(r, g, i int) enforce.Call {
					return routeCall("POST", fmt.Sprintf("/pooled/%d", n(r, g, i)), fmt.Sprintf("u%d", n(r, g, i)), fmt.Sprintf("198.51.100.%d", n(r, g, i)%250+1))
				}},
				// Per address: users, agents and anonymous callers from
				// 256 addresses of one /64.
				{"per-ip", func(r, g, i int) enforce.Call {
					c := routeCall("POST", "/per-ip/x", "", fmt.Sprintf("2001:db8:7:7::%x", n(r, g, i)+1))
					switch g % 3 {
					case 1:
						c.ClientID = fmt.Sprintf("bot%d", r)
					case 2:
						c.Username = fmt.Sprintf("u%d", g)
					}
					return c
				}},
				// Per user: one user from 256 addresses, on many paths.
				{"per-user", func(r, g, i int) enforce.Call {
					return routeCall("POST", fmt.Sprintf("/per-user/%d", g), "alice", fmt.Sprintf("203.0.113.%d", n(r, g, i)%250+1))
				}},
				// Per agent: one agent from 256 addresses.
				{"per-agent", func(r, g, i int) enforce.Call {
					c := routeCall("POST", "/per-agent/x", "", fmt.Sprintf("192.0.2.%d", n(r, g, i)%250+1))
					c.ClientID = "bot"
					return c
				}},
				// Per team: 32 members of team acme from 256 addresses.
				{"per-team", func(r, g, i int) enforce.Call {
					c := routeCall("POST", "/per-team/x", fmt.Sprintf("m%d", g), fmt.Sprintf("2001:db8:%x::1", n(r, g, i)+1))
					c.Team = "acme"
					return c
				}},
			} {
				if got := run(s.call); got != int64(limits[s.tier]) {
					t.Errorf("%s: 256 calls through 4 replicas: %d allowed, want exactly %d", s.tier, got, limits[s.tier])
				}
			}
			if algo == ratelimit.AlgorithmTokenBucket {
				return // a token bucket's row holds its TAT, not a count
			}
			rows, err := st.Pool().Query(ctx, `select key, count from rl_counters where key like '%route:%'`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			seen := map[string]bool{}
			for rows.Next() {
				var key string
				var count int64
				if err := rows.Scan(&key, &count); err != nil {
					t.Fatal(err)
				}
				for tier, limit := range limits {
					if strings.Contains(key, "route:"+tier) {
						seen[tier] = true
						if count > int64(limit) {
							t.Errorf("counter %s holds %d, over the tier's %d", key, count, limit)
						}
					}
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(seen) != len(limits) {
				t.Errorf("counter rows found for the tiers %v only", seen)
			}
		})
	}
}
