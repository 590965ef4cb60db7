package redis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// hang bounds every wait of the fault tests: never a timed assertion,
// only the point where a test that would wait forever fails instead.
const hang = 90 * time.Second

// scratch starts a throwaway server (kind "cluster", "standalone" or
// "sentinel") of the test's own (redistest.Scratch). Only these servers
// are ever killed or restarted: the shared ones the other tests use are
// never touched.
func scratch(t *testing.T, kind string) (dir, url string) {
	t.Helper()
	return redistest.Scratch(t, kind)
}

func redisdev(t *testing.T, args ...string) string {
	t.Helper()
	return redistest.Redisdev(t, args...)
}

// faultState: targets open-N (fail open, the default) and closed-N
// (fail_closed), each limited far above what the test sends, plus a
// target "after" of limit 5 for the check that counting is exact again.
func faultState(n int) enforce.State {
	st := enforce.State{Definitions: enforcetest.Sentinels()}
	for i := range n {
		st.Definitions = append(st.Definitions,
			def(ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: fmt.Sprintf("open-%d", i), WindowSeconds: 3600, MaxRequests: ptr(1_000_000)}),
			def(ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: fmt.Sprintf("closed-%d", i), WindowSeconds: 3600, MaxRequests: ptr(1_000_000), FailClosed: true}))
	}
	st.Definitions = append(st.Definitions,
		def(ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "after", WindowSeconds: 3600, MaxRequests: ptr(5)}))
	return st
}

// TestMasterKilledMidLoad kills a cluster master (its pid, as the script
// recorded it) while 16 goroutines decide calls spread over 24 targets,
// half of them fail_closed (killUnderLoad says what holds).
func TestMasterKilledMidLoad(t *testing.T) {
	dir, url := scratch(t, "cluster")
	victim := masterDir(t, dir)
	killUnderLoad(t, url, func(t *testing.T, _ *redis.Store) { killPidIn(t, victim) })
}

// killUnderLoad opens a Store on url and an Enforcer over it, decides
// calls from 16 goroutines spread over 24 targets, half of them
// fail_closed (faultState), calls kill with the Store once 200 were counted, and
// checks that every decision follows its definition's fail policy: a
// fail_closed target's is never fail-open, a fail-open target's never
// fail-closed; none panics or hangs past the backend timeout's bound.
// Once the deployment has failed over, decisions are counted again, by
// the same Enforcer and client (no restart), and exactly: a fresh limit
// of 5 admits 5 of 10. It returns the Store, still open, for what the
// caller checks next.
func killUnderLoad(t *testing.T, url string, kill func(t *testing.T, s *redis.Store)) *redis.Store {
	t.Helper()
	ctx := context.Background()
	s, err := redis.Open(ctx, url, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	const targets = 12
	e, err := enforce.New(ctx, enforce.Options{Counters: s, Source: enforcetest.StaticSource(faultState(targets)),
		SweepInterval: -1, BackendTimeout: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	type tally struct{ counted, failOpen, failClosed int }
	var mu sync.Mutex
	var total tally
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				closed := (g+i)%2 == 1
				name := fmt.Sprintf("open-%d", (g+i)%targets)
				if closed {
					name = fmt.Sprintf("closed-%d", (g+i)%targets)
				}
				d, _ := e.Check(ctx, enforce.Call{Username: fmt.Sprintf("u%d", g), TargetType: "mcp_server", TargetName: name})
				mu.Lock()
				switch d.Reason {
				case "allowed":
					total.counted++
				case "fail-open":
					total.failOpen++
					if closed {
						t.Errorf("%s (fail_closed) was decided fail-open", name)
					}
				case "fail-closed":
					total.failClosed++
					if !closed {
						t.Errorf("%s (fail open) was decided fail-closed", name)
					}
				default:
					t.Errorf("%s: reason %q", name, d.Reason)
				}
				mu.Unlock()
			}
		})
	}
	// Some load first, then the kill.
	waitFor(t, "decisions before the kill", func() bool { mu.Lock(); defer mu.Unlock(); return total.counted > 200 })
	kill(t, s)
	killed := time.Now()
	waitFor(t, "decisions to fail while the master is down", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return total.failOpen > 0 && total.failClosed > 0
	})
	// Recovered: a run of 500 decisions in a row, every one counted.
	var streak int
	var last tally
	waitFor(t, "the failover: 500 decisions in a row counted again", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if total.failOpen != last.failOpen || total.failClosed != last.failClosed {
			streak = 0
		} else {
			streak += total.counted - last.counted
		}
		last = total
		return streak >= 500
	})
	close(stop)
	wg.Wait()
	t.Logf("decisions: %d counted, %d fail-open, %d fail-closed; counting again %v after the kill",
		total.counted, total.failOpen, total.failClosed, time.Since(killed).Round(100*time.Millisecond))
	allowed := 0
	for range 10 {
		d, err := e.Check(ctx, enforce.Call{Username: "x", TargetType: "mcp_server", TargetName: "after"})
		if err != nil {
			t.Fatalf("after the failover: %v", err)
		}
		if d.Allowed {
			allowed++
		}
	}
	if allowed != 5 {
		t.Errorf("after the failover a limit of 5 admitted %d of 10 calls", allowed)
	}
	return s
}

// killPidIn kills (SIGKILL: no shutdown, as in a crash) the server whose
// pid the script wrote in dir.
func killPidIn(t *testing.T, dir string) {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(dir, "redis.pid"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(pid)))
	if err != nil {
		t.Fatalf("%s/redis.pid: %v", dir, err)
	}
	if err := syscall.Kill(n, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the master (pid %d in %s): %v", n, dir, err)
	}
	t.Logf("killed the master in %s (pid %d)", dir, n)
}

// masterDir is the data directory of a master of the cluster in dir.
func masterDir(t *testing.T, dir string) string {
	t.Helper()
	for i := range 6 {
		d := filepath.Join(dir, fmt.Sprintf("node%d", i))
		port, err := os.ReadFile(filepath.Join(d, "port"))
		if err != nil {
			t.Fatal(err)
		}
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"127.0.0.1:" + strings.TrimSpace(string(port))},
			ForceSingleClient: true, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		role, err := c.Do(context.Background(), c.B().Role().Build()).ToArray()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := role[0].ToString(); r == "master" {
			return d
		}
	}
	t.Fatal("no master found")
	return ""
}

// waitFor polls cond until it holds, failing the test after hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(hang)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRestartedEmpty: counters are soft state. A server (or a whole
// cluster) restarted empty forgets the counts of the windows in progress,
// and nothing else: the same Store, without a restart of its own, counts
// again from zero once the server is back, so a window in progress can
// admit its limit once more (an operator loses at most one window of
// counts per gate). Calls while it is down fail (the Enforcer's fail
// policy decides them); none is decided on a half-known state.
func TestRestartedEmpty(t *testing.T) {
	for _, kind := range []string{"standalone", "cluster"} {
		t.Run(kind, func(t *testing.T) {
			t0 := time.Now()
			dir, url := scratch(t, kind)
			ctx := context.Background()
			s, err := redis.Open(ctx, url, redis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			now := time.Now()
			a := enforce.CounterGate{Key: "restart-a", Window: time.Hour, Limit: 3, Enforce: true}
			b := enforce.CounterGate{Key: "restart-b", Algorithm: enforce.AlgorithmTokenBucket, Window: time.Hour, Limit: 3, Burst: 3, Enforce: true}
			call := enforce.TakeRequest{Gates: []enforce.CounterGate{a, b}, Cost: 1, Consume: true, Now: now}
			admitted := func() int {
				n := 0
				for range 5 {
					var res []enforce.TakeResult
					waitFor(t, "the server to answer", func() bool {
						var err error
						res, err = s.Take(ctx, []enforce.TakeRequest{call}, time.Now().Add(time.Second))
						return err == nil
					})
					if res[0].Allowed {
						n++
					}
				}
				return n
			}
			if got := admitted(); got != 3 {
				t.Fatalf("before the restart: %d of 5 admitted on a limit of 3", got)
			}
			t.Logf("%v: started and counted", time.Since(t0))
			redisdev(t, "scratch-stop", dir)
			t.Logf("%v: stopped", time.Since(t0))
			if _, err := s.Take(ctx, []enforce.TakeRequest{call}, time.Now().Add(time.Second)); err == nil {
				t.Error("a Take while the server is down answered without an error")
			} else if !errors.Is(err, enforce.ErrOutcomeUnknown) && !errors.Is(err, enforce.ErrNotApplied) && !errors.Is(err, enforce.ErrTimedOut) {
				t.Errorf("a Take while the server is down: %v, want an error wrapping one of the seam's errors (so the fail policy decides)", err)
			}
			redisdev(t, "scratch-"+kind, dir)
			t.Logf("%v: restarted", time.Since(t0))
			if got := admitted(); got != 3 {
				t.Errorf("after a restart empty: %d of 5 admitted, want 3 (the window counts from zero again)", got)
			}
		})
	}
}
