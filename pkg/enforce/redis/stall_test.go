package redis_test

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestStalledServerTakesNothingForFailedDecisions stops a server of the
// test's own (SIGSTOP) while 8 goroutines decide calls on a fail_closed
// target, and resumes it once decisions have failed. A decision answered
// by the fail policy consumed nothing: the scripts queued behind the stall
// run when the server resumes, past their deadline, and refuse. So the
// counter then holds exactly the decisions that were allowed.
//
// The server is stopped between decisions (none in flight): a script the
// server ran just before it stopped, whose answer could not leave, is
// counted though its caller hears a failure, as a PostgreSQL commit whose
// answer is lost is (docs/design.md, "Counters on Redis").
func TestStalledServerTakesNothingForFailedDecisions(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	s, err := redis.Open(ctx, srv.URL, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 1_000_000
	src := enforcetest.StaticSource(enforce.State{Definitions: append(enforcetest.Sentinels(),
		def(ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "closed", WindowSeconds: 3600,
			MaxRequests: ptr(limit), FailClosed: true}))})
	e := enforcetest.Build(t, enforce.Options{SweepInterval: -1, BackendTimeout: 100 * time.Millisecond, OnClose: s.Close}, s, src)
	call := enforce.Call{Username: "u", TargetType: "mcp_server", TargetName: "closed"}

	var (
		mu                  sync.Mutex
		allowed, failClosed int
		other               []string
		between             sync.RWMutex // held for writing: no decision in flight
		stop                = make(chan struct{})
		wg                  sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				between.RLock()
				d, _ := e.Check(ctx, call)
				between.RUnlock()
				mu.Lock()
				switch d.Reason {
				case enforce.ReasonAllowed:
					allowed++
				case enforce.ReasonFailClosed:
					failClosed++
				default:
					other = append(other, d.Reason)
				}
				mu.Unlock()
			}
		})
	}
	tally := func() (int, int) { mu.Lock(); defer mu.Unlock(); return allowed, failClosed }
	waitFor(t, "decisions before the stall", func() bool { a, _ := tally(); return a >= 200 })
	between.Lock()
	if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	between.Unlock()
	waitFor(t, "decisions to fail while the server is stopped", func() bool { _, f := tally(); return f >= 32 })
	if err := srv.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed, _ := tally()
	waitFor(t, "decisions after the server resumed", func() bool { a, _ := tally(); return a >= resumed+200 })
	close(stop)
	wg.Wait()
	if len(other) > 0 {
		t.Errorf("decisions with other reasons than allowed and fail-closed: %v", other)
	}
	t.Logf("%d allowed, %d fail-closed", allowed, failClosed)

	// What the counter holds, through an Enforcer on the same counters
	// whose deadline a busy machine cannot miss.
	steady := enforcetest.Build(t, enforce.Options{SweepInterval: -1, BackendTimeout: 10 * time.Second}, s, src)
	d, err := steady.Check(ctx, call)
	if err != nil || !d.Allowed {
		t.Fatalf("after the stall: allowed %v, err %v", d.Allowed, err)
	}
	if counted := limit - d.Remaining - 1; counted != int64(allowed) {
		t.Errorf("the counter holds %d after %d allowed and %d fail-closed decisions, want %d: %d decisions answered by the fail policy consumed",
			counted, allowed, failClosed, allowed, counted-int64(allowed))
	}
}
