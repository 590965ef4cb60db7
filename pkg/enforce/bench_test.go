package enforce_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// BenchmarkCheckNoGates is a call no definition applies to: it must stay a
// few map lookups with no database round trip (the pool is never touched:
// the benchmark also reports round trips per op).
func BenchmarkCheckNoGates(b *testing.B) {
	st := pgtest.NewStore(b)
	e, err := postgres.New(context.Background(), st.Pool(), enforce.Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	call := enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw"}
	ctx := context.Background()
	before := st.Pool().Stat().AcquireCount()
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := e.Check(ctx, call); !d.Allowed {
			b.Fatal("denied")
		}
	}
	b.ReportMetric(float64(st.Pool().Stat().AcquireCount()-before)/float64(b.N), "roundtrips/op")
}

// benchEnforcer seeds three gates per call (caller, caller_target and a
// server group listing every target) over keys callers and targets, with
// limits no benchmark reaches, so every decision takes the full allowed
// path.
func benchEnforcer(b *testing.B, keys int) *enforce.Enforcer {
	b.Helper()
	st := pgtest.NewStore(b)
	ctx := context.Background()
	const high = 1_000_000_000
	if _, err := st.Pool().Exec(ctx, `
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, mode)
		values ('caller:group:bench:3600', 'caller', 'group', 'bench', 3600, $1, 'enforce'),
		       ('caller_target:group:bench:3600', 'caller_target', 'group', 'bench', 3600, $1, 'enforce')`, high); err != nil {
		b.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, members, mode)
		values ('target:server_group:bench:3600', 'target', 'server_group', 'bench', 3600, $1,
		        (select array_agg('s' || i) from generate_series(0, $2 - 1) i), 'enforce')`, high, keys); err != nil {
		b.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `insert into rl_memberships (subject_type, subject, groups)
		select 'user', 'u' || i, '{bench}' from generate_series(0, $1 - 1) i`, keys); err != nil {
		b.Fatal(err)
	}
	e, err := postgres.New(ctx, st.Pool(), enforce.Options{SweepInterval: -1, BackendTimeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	// Warm up: every counter row exists, as in steady state.
	for i := range keys {
		if _, err := e.Check(ctx, benchCall(i, keys)); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

func benchCall(i, keys int) enforce.Call {
	k := strconv.Itoa(i % keys)
	return enforce.Call{Username: "u" + k, TargetType: "mcp_server", TargetName: "s" + k}
}

// BenchmarkCheckThreeGates decides calls spread over 1,000 callers and
// targets, three gates each, from one goroutine: the latency of one
// decision's round trip.
func BenchmarkCheckThreeGates(b *testing.B) {
	e := benchEnforcer(b, 1000)
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := e.Check(ctx, benchCall(i, 1000)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCheckThreeGatesParallel is the same from 64 goroutines, where
// decisions share round trips.
func BenchmarkCheckThreeGatesParallel(b *testing.B) {
	e := benchEnforcer(b, 1000)
	ctx := context.Background()
	var n atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 CPUs
	// The database and its definitions are setup, not decisions.
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Check(ctx, benchCall(int(n.Add(1)), 1000)); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
