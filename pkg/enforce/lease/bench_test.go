package lease_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/cputime"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// leaseBenchEnforcer is an Enforcer whose calls meet three gates (caller,
// caller_target and target, limits no benchmark reaches) over the
// in-memory store; over a lease layer leasing every gate when leases is
// set (the layer is returned, nil without).
func leaseBenchEnforcer(b *testing.B, leases bool) (*enforce.Enforcer, *lease.Store) {
	b.Helper()
	high := 1_000_000_000
	user := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "bench",
		WindowSeconds: 3600, UserMaxRequests: &high, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true}
	ctg := user
	ctg.Axis = ratelimit.AxisCallerTarget
	tgt := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s",
		WindowSeconds: 3600, MaxRequests: &high, Enabled: true, Mode: ratelimit.ModeEnforce}
	defs := []ratelimit.Definition{user, ctg, tgt}
	for i := range defs {
		defs[i].ID = defs[i].Key()
	}
	opts := enforce.Options{Counters: memory.New(), Source: enforcetest.StaticSource(enforce.State{Definitions: append(enforcetest.Sentinels(), defs...)}),
		SweepInterval: -1, BackendTimeout: 10 * time.Second}
	var layer *lease.Store
	if leases {
		var err error
		layer, err = lease.New(opts.Counters, lease.Options{All: true, Time: time.Second, Replicas: 4, Timeout: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(layer.Close)
		opts.Counters = layer
	}
	e, err := enforce.New(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	return e, layer
}

// BenchmarkLeaseHotKey decides calls of one caller on one target (three
// gates, all leased) from 64 goroutines: the local path, no I/O but a
// block refill per key and lease time. Beside decisions/s it reports the
// process's CPU time per decision and the rate two cores would sustain at
// that cost (decisions/s@2cores), which a busy machine does not skew.
func BenchmarkLeaseHotKey(b *testing.B) {
	for _, leases := range []bool{false, true} {
		name := "store"
		if leases {
			name = "leases"
		}
		b.Run(name, func(b *testing.B) {
			e, _ := leaseBenchEnforcer(b, leases)
			ctx := context.Background()
			call := enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
			b.SetParallelism(32) // 64 goroutines on 2 CPUs
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cputime.Process()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if d, err := e.Check(ctx, call); err != nil || !d.Allowed {
						b.Errorf("allowed %v, err %v", d.Allowed, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
			// CPU per decision (every thread, GC included) does not depend
			// on what else the machine runs: 2 cores / it is the rate two
			// idle cores would sustain.
			if cpu := cputime.Process() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
				b.ReportMetric(2e9*float64(b.N)/float64(cpu.Nanoseconds()), "decisions/s@2cores")
			}
		})
	}
}

// BenchmarkLeaseLocalPath is the lease layer alone on one hot key's three
// gates, from 64 goroutines: finding the leases, taking from their
// blocks, describing the local state (what BenchmarkLeaseHotKey adds to
// building the gates of a call and the Enforcer's decision).
func BenchmarkLeaseLocalPath(b *testing.B) {
	e, layer := leaseBenchEnforcer(b, true)
	ctx := context.Background()
	d, err := e.Check(ctx, enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "s"})
	if err != nil || len(d.Gates) != 3 {
		b.Fatalf("setup: %d gates, err %v", len(d.Gates), err)
	}
	gates := make([]enforce.CounterGate, len(d.Gates))
	for i, g := range d.Gates {
		gates[i] = enforce.CounterGate{Key: g.Key(), Algorithm: g.Algorithm, Window: time.Duration(g.WindowSeconds) * time.Second,
			Limit: g.Limit, Burst: g.Burst, Enforce: true}
	}
	// A call meets a lease being retired (its lease time passed) now and
	// then: that gate goes to the store, as in a Check.
	var misses atomic.Int64
	miss := func(ctx context.Context, req enforce.TakeRequest) (enforce.TakeResult, error) {
		misses.Add(1)
		res, err := layer.Take(ctx, []enforce.TakeRequest{req}, time.Now().Add(10*time.Second))
		if err != nil {
			return enforce.TakeResult{}, err
		}
		return res[0], nil
	}
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cputime.Process()
	b.RunParallel(func(pb *testing.PB) {
		into := enforce.TakeResult{Room: make([]bool, len(gates)), States: make([]enforce.GateState, len(gates))}
		for pb.Next() {
			req := enforce.TakeRequest{Gates: gates, Cost: 1, Consume: true, Now: time.Now()}
			if res, err := layer.TakeLocal(ctx, req, into, miss); err != nil || !res.Allowed {
				b.Errorf("allowed %v, err %v", res.Allowed, err)
				return
			}
		}
	})
	b.ReportMetric(float64(misses.Load())/float64(b.N), "misses/op")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	if cpu := cputime.Process() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		b.ReportMetric(2e9*float64(b.N)/float64(cpu.Nanoseconds()), "decisions/s@2cores")
	}
}
