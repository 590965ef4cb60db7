package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// serverCounter is the key of the target gate of the calls benchmarked.
var serverCounter = counterkey.Target(ratelimit.Definition{ID: ratelimit.DefinitionID(ratelimit.AxisTarget, ratelimit.EntityMCPServer, "s", 60),
	WindowSeconds: 60}, "").String()

// benchRequest is a typical call: a caller gate and a target gate, one of
// 1,000 callers.
func benchRequest(i int, now time.Time) []enforce.TakeRequest {
	return []enforce.TakeRequest{{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
		{Key: counterkey.Caller(60, fmt.Sprintf("user:u%03d", i%1000)).String(), Algorithm: enforce.AlgorithmFixedWindow, Window: time.Minute, Limit: 1 << 40, Enforce: true},
		{Key: serverCounter, Algorithm: enforce.AlgorithmFixedWindow, Window: time.Minute, Limit: 1 << 40, Enforce: true},
	}}}
}

// BenchmarkTake is one call of two gates per Take, from one goroutine.
func BenchmarkTake(b *testing.B) {
	s := memory.New()
	ctx := context.Background()
	reqs := benchRequests()
	i := 0
	for b.Loop() {
		if _, err := s.Take(ctx, reqs[i%len(reqs)], time.Time{}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkTakeParallel is BenchmarkTake from GOMAXPROCS goroutines (and
// -cpu more), every call sharing the target gate.
func BenchmarkTakeParallel(b *testing.B) {
	s := memory.New()
	ctx := context.Background()
	reqs := benchRequests()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Take(ctx, reqs[i%len(reqs)], time.Time{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkTakeParallelDistinct is the parallel case without the shared
// target gate: only the caller gates, so goroutines rarely share a shard.
func BenchmarkTakeParallelDistinct(b *testing.B) {
	s := memory.New()
	ctx := context.Background()
	now := time.Unix(1_800_000_010, 0)
	reqs := make([][]enforce.TakeRequest, 1000)
	for i := range reqs {
		r := benchRequest(i, now)
		r[0].Gates = r[0].Gates[:1]
		reqs[i] = r
	}
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Take(ctx, reqs[i%len(reqs)], time.Time{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// benchRequests is a thousand calls of distinct callers on one target, at
// one fixed time.
func benchRequests() [][]enforce.TakeRequest {
	now := time.Unix(1_800_000_010, 0)
	reqs := make([][]enforce.TakeRequest, 1000)
	for i := range reqs {
		reqs[i] = benchRequest(i, now)
	}
	return reqs
}

// BenchmarkTakeAlgorithms is one call of three gates (a caller, a
// caller_target and a shared target gate, as a typical decision), per
// algorithm, from one goroutine and from GOMAXPROCS goroutines
// (docs/performance.md).
func BenchmarkTakeAlgorithms(b *testing.B) {
	for _, algo := range []enforce.Algorithm{enforce.AlgorithmFixedWindow, enforce.AlgorithmSlidingWindow, enforce.AlgorithmTokenBucket} {
		reqs := threeGateRequests(algo)
		b.Run(string(algo), func(b *testing.B) {
			s := memory.New()
			ctx := context.Background()
			i := 0
			for b.Loop() {
				if _, err := s.Take(ctx, reqs[i%len(reqs)], time.Time{}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(string(algo)+"/parallel", func(b *testing.B) {
			s := memory.New()
			ctx := context.Background()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := s.Take(ctx, reqs[i%len(reqs)], time.Time{}); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}

// threeGateRequests is a thousand calls of distinct callers on one
// target, three gates of algo each, at one fixed time.
func threeGateRequests(algo enforce.Algorithm) [][]enforce.TakeRequest {
	now := time.Unix(1_800_000_010, 0)
	gate := func(key string) enforce.CounterGate {
		return enforce.CounterGate{Key: key, Algorithm: algo, Window: time.Minute, Limit: 1 << 40, Burst: 1 << 40, Enforce: true}
	}
	reqs := make([][]enforce.TakeRequest, 1000)
	for i := range reqs {
		reqs[i] = []enforce.TakeRequest{{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
			gate(counterkey.Caller(60, fmt.Sprintf("user:u%03d", i)).String()),
			gate(counterkey.CallerTarget(60, fmt.Sprintf("user:u%03d", i), "mcp_server:s").String()),
			gate(serverCounter),
		}}}
	}
	return reqs
}
