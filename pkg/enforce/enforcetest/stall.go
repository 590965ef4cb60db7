package enforcetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Stallable is a counter store whose server a test can stall for real:
// Stall makes it stop working on what it is sent while keeping it (a
// server stopped with SIGSTOP keeps the bytes in its sockets; a
// PostgreSQL table locked by another transaction keeps its statements
// waiting), Resume lets it go on. Unlike Hanging, the work sent during
// the stall is still there when the server resumes, late.
type Stallable struct {
	Store         enforce.CounterStore
	Stall, Resume func()
}

// stallWait bounds each wait of TestStalledStore: never a timed
// assertion, only where a test that would wait forever fails instead.
const stallWait = 90 * time.Second

// TestStalledStore checks the fail policies' promise under a real stall
// of the store's server: a decision the fail policy answered consumed
// nothing. Eight goroutines decide calls on a fail_closed target (limit
// far above what they send) through an Enforcer built by build with a
// BackendTimeout of 100 ms; the server is stalled (between decisions:
// none is in flight when Stall is called) until 32 decisions have
// failed, then resumed, and the calls go on until 200 more are allowed.
// The target's counter must then hold exactly the allowed decisions: what
// the server got to late, after its callers were answered fail-closed,
// took nothing.
//
// A store whose server cannot be stalled (the memory store) has nothing
// to check here.
func TestStalledStore(t *testing.T, open func(t *testing.T) Stallable, build BuildEnforcer) {
	t.Helper()
	st := open(t)
	const limit = 1_000_000
	most := limit
	target := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "stalled",
		WindowSeconds: 3600, MaxRequests: &most, Enabled: true, Mode: ratelimit.ModeEnforce, FailClosed: true}
	target.ID = target.Key()
	src := StaticSource(enforce.State{Definitions: append(Sentinels(), target)})
	e := build(t, enforce.Options{SweepInterval: -1, BackendTimeout: 100 * time.Millisecond}, st.Store, src)
	call := policyCall("stalled")
	ctx := context.Background()

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
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			wg.Wait()
		}
	}()
	tally := func() (int, int) { mu.Lock(); defer mu.Unlock(); return allowed, failClosed }
	waitUntil(t, "decisions before the stall", func() bool { a, _ := tally(); return a >= 200 })
	between.Lock()
	st.Stall()
	between.Unlock()
	waitUntil(t, "decisions to fail while the server is stalled", func() bool { _, f := tally(); return f >= 32 })
	st.Resume()
	resumed, _ := tally()
	waitUntil(t, "decisions after the server resumed", func() bool { a, _ := tally(); return a >= resumed+200 })
	close(stop)
	wg.Wait()
	stopped = true
	if len(other) > 0 {
		t.Errorf("decisions with other reasons than allowed and fail-closed: %v", other)
	}
	t.Logf("%d allowed, %d fail-closed", allowed, failClosed)

	// What the counter holds, through an Enforcer on the same counters
	// whose deadline a busy machine cannot miss.
	steady := build(t, enforce.Options{SweepInterval: -1, BackendTimeout: 10 * time.Second}, st.Store, src)
	d, err := steady.Check(ctx, call)
	if err != nil || !d.Allowed {
		t.Fatalf("after the stall: allowed %v, err %v", d.Allowed, err)
	}
	if counted := limit - d.Remaining - 1; counted != int64(allowed) {
		t.Errorf("the counter holds %d after %d allowed and %d fail-closed decisions, want %d: %d decisions answered by the fail policy consumed",
			counted, allowed, failClosed, allowed, counted-int64(allowed))
	}
}

// waitUntil polls cond until it holds, failing the test after stallWait.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(stallWait)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
