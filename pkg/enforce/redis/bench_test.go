package redis_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// BenchmarkTake: one call of three fixed-window gates per Take (spread
// over 10,000 callers), from GOMAXPROCS × 8 goroutines, on the standalone
// server and the cluster (make bench sets REDIS_URL and
// REDIS_CLUSTER_URL the way make test does; unset, the benchmark is
// skipped).
func BenchmarkTake(b *testing.B) {
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			s := openStore(b, tg.env)
			all := ratelimit.Definition{ID: ratelimit.DefinitionID(ratelimit.AxisTarget, ratelimit.EntityServerGroup, "all", 3600), WindowSeconds: 3600}
			now := time.Now()
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					k := strconv.FormatInt(n.Add(1)%10_000, 10)
					req := enforce.TakeRequest{Cost: 1, Consume: true, Now: now, Gates: []enforce.CounterGate{
						{Key: counterkey.Caller(3600, "user:"+k).String(), Window: time.Hour, Limit: 1 << 40, Enforce: true},
						{Key: counterkey.CallerTarget(3600, "user:"+k, "mcp_server:s"+k).String(), Window: time.Hour, Limit: 1 << 40, Enforce: true},
						{Key: counterkey.Target(all, "mcp_server:s"+k).String(), Window: time.Hour, Limit: 1 << 40, Enforce: true},
					}}
					res, err := s.Take(context.Background(), []enforce.TakeRequest{req}, time.Now().Add(5*time.Second))
					if err != nil || !res[0].Allowed {
						b.Fatalf("Take: %v %+v", err, res)
					}
				}
			})
		})
	}
}
