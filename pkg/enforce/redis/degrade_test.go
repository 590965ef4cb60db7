package redis_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/degrade"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// replicaTally is what one replica's decisions were, by kind.
type replicaTally struct {
	shared, local, localRefused, refused, other atomic.Int64
}

// TestDegradedOutage is the degraded mode's acceptance test, on a
// throwaway standalone server and a throwaway cluster really stopped and
// started: two replicas (two Enforcers, each with its own Redis client and
// Fallback, a replica count of 2) share a target limited to 1,000 calls a
// minute with the fail policy degrade, on one clock that stays in the
// minute. Under load the server is stopped: while it is down every
// decision says degraded and each replica admits at most its share,
// ceil(1000 / 2) = 500 (replica a is stopped at 300 decisions, b runs on
// to 700, so that the window keeps room). The server comes back empty (no
// persistence), the load goes on: every local admission is reported
// exactly once (the shared counter ends at the reports plus what it
// admitted after), and what the window admits on the shared counters after
// the outage is at most max(0, 1000 - reports): the bound of
// docs/operations.md, "Degraded mode".
func TestDegradedOutage(t *testing.T) {
	for _, kind := range []string{"standalone", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			dir, url := scratch(t, kind)
			ctx := context.Background()
			var clockNs atomic.Int64
			clockNs.Store(time.Now().Truncate(time.Minute).Add(time.Second).UnixNano())
			now := func() time.Time { return time.Unix(0, clockNs.Load()) }
			limit := 1000
			d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "api", WindowSeconds: 60,
				MaxRequests: &limit, FailPolicy: ratelimit.FailPolicyDegrade}
			st := enforce.State{Definitions: append(enforcetest.Sentinels(), def(d))}
			replica := func() (*enforce.Enforcer, *degrade.Fallback) {
				s, err := redis.Open(ctx, url, redis.Options{})
				if err != nil {
					t.Fatal(err)
				}
				f, err := degrade.New(degrade.Options{Counters: s, Replicas: func() int { return 2 }, Now: now,
					ProbeInterval: 50 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				e, err := enforce.New(ctx, enforce.Options{Counters: s, Source: enforcetest.StaticSource(st), Fallback: f,
					OnClose: func() { f.Close(); s.Close() }, Now: now, SweepInterval: -1, CacheTTL: time.Hour,
					BackendTimeout: 250 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(e.Close)
				return e, f
			}
			ea, fa := replica()
			eb, fb := replica()
			call := enforce.Call{Username: "u", TargetType: ratelimit.EntityMCPServer, TargetName: "api"}

			var a, b replicaTally
			var down atomic.Bool // the server is stopped
			// back: the server is being started again; what the shared
			// counters admit from then on is on the new, empty server.
			var back atomic.Bool
			var sharedAfter atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			run := func(e *enforce.Enforcer, tl *replicaTally, quota int64) {
				for range 4 {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							if down.Load() && tl.local.Load()+tl.localRefused.Load() >= quota {
								time.Sleep(5 * time.Millisecond) // this replica's share of the outage's load is sent
								continue
							}
							dec, _ := e.Check(ctx, call)
							switch {
							case dec.Degraded && dec.Allowed:
								tl.local.Add(1)
							case dec.Degraded:
								tl.localRefused.Add(1)
							case dec.Reason == enforce.ReasonAllowed:
								tl.shared.Add(1)
								if back.Load() {
									sharedAfter.Add(1)
								}
							case dec.Reason == enforce.ReasonThrottled:
								tl.refused.Add(1)
							default:
								tl.other.Add(1)
								t.Errorf("a decision %s (allowed %v): want allowed or throttled, on the shared counters or degraded", dec.Reason, dec.Allowed)
							}
						}
					})
				}
			}
			run(ea, &a, 300)
			run(eb, &b, 700)
			waitFor(t, "calls counted before the outage", func() bool { return a.shared.Load()+b.shared.Load() >= 100 })

			down.Store(true)
			redisdev(t, "scratch-stop", dir)
			t.Logf("stopped: %d counted before", a.shared.Load()+b.shared.Load())
			waitFor(t, "each replica's load during the outage", func() bool {
				return a.local.Load()+a.localRefused.Load() >= 300 && b.local.Load()+b.localRefused.Load() >= 700
			})
			if n := a.local.Load(); n > 500 || n == 0 {
				t.Errorf("replica a admitted %d locally, want 1 to its share 500", n)
			}
			if n := b.local.Load(); n != 500 {
				t.Errorf("replica b admitted %d locally of 700 and more, want its share 500", n)
			}

			back.Store(true)
			redisdev(t, "scratch-"+kind, dir)
			down.Store(false)
			t.Logf("restarted empty; a admitted %d locally, b %d", a.local.Load(), b.local.Load())
			waitFor(t, "both replicas back on the shared counters", func() bool {
				return !fa.Degraded() && !fb.Degraded() && a.refused.Load()+b.refused.Load() > 200
			})
			close(stop)
			wg.Wait()

			local := a.local.Load() + b.local.Load()
			bound := max(0, int64(limit)-local)
			t.Logf("after the outage: %d reported, %d admitted on the shared counters (bound %d), %d refused",
				local, sharedAfter.Load(), bound, a.refused.Load()+b.refused.Load())
			if n := a.local.Load(); n > 500 {
				t.Errorf("replica a admitted %d locally in the minute, more than its share 500", n)
			}
			if n := b.local.Load(); n > 500 {
				t.Errorf("replica b admitted %d locally in the minute, more than its share 500", n)
			}
			if sharedAfter.Load() > bound {
				t.Errorf("the window admitted %d on the shared counters after the outage, more than max(0, 1000 - %d reported) = %d",
					sharedAfter.Load(), local, bound)
			}
			peek, err := ea.Peek(ctx, call)
			if err != nil || len(peek.Gates) != 1 {
				t.Fatalf("peek: %+v, %v", peek, err)
			}
			if got, want := peek.Gates[0].Count, local+sharedAfter.Load(); got != want {
				t.Errorf("the shared counter holds %d, want %d: the %d local admissions reported once and the %d admitted after",
					got, want, local, sharedAfter.Load())
			}
		})
	}
}
