package enforcetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// OverloadCalls is how many decisions TestOverload sends at once: more
// than an Enforcer keeps waiting for its counter store.
const OverloadCalls = 10_000

// TestOverload checks that a burst larger than the counter store can
// answer in time is shed, never decided by the fail policy: OverloadCalls
// concurrent decisions, half of them for a caller whose limit is used up,
// over a store built by newStore that answers each round trip 40 ms late
// (a round trip of at most 32 decisions: the whole burst would take
// longer than the backend timeout).
//
//   - the used-up caller is admitted 0 times: each of its calls is
//     throttled (shed calls too: the Enforcer saw its gate used up);
//   - the fresh callers are allowed or shed, never fail-open: shed is
//     reason overloaded with the fail-open policy, fail-closed with the
//     fail-closed one (shedding never opens a fail-closed call);
//   - some calls were shed (the burst was an overload), and shed calls
//     took nothing: afterwards the shared limit's count is exactly the
//     decisions admitted, and a new call is decided normally.
//
// And a burst over a store that answers nothing is the store's failure,
// not overload: every call follows the fail policy (fail-open), none is
// shed.
func TestOverload(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	t.Helper()
	for _, closed := range []bool{false, true} {
		name := "fail open"
		if closed {
			name = "fail closed"
		}
		t.Run(name, func(t *testing.T) {
			overload(t, newStore(t), build, closed)
		})
	}
	t.Run("store hangs", func(t *testing.T) { overloadStalled(t, newStore(t), build) })
}

// overloadStalled sends OverloadCalls decisions at once to a store that
// never answers: more than the queue holds, and none shed.
func overloadStalled(t *testing.T, store enforce.CounterStore, build BuildEnforcer) {
	big := 1_000_000
	shared := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "big",
		WindowSeconds: 3600, MaxRequests: &big, Enabled: true, Mode: ratelimit.ModeEnforce}
	shared.ID = shared.Key()
	e := build(t, enforce.Options{BackendTimeout: 100 * time.Millisecond, Workers: 1},
		Hanging(store), StaticSource(enforce.State{Definitions: append(Sentinels(), shared)}))
	var mu sync.Mutex
	got := map[string]int{}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range OverloadCalls {
		wg.Go(func() {
			<-start
			d, _ := e.Check(context.Background(), enforce.Call{Username: fmt.Sprintf("u%d", i), TargetType: ratelimit.EntityMCPServer, TargetName: "big"})
			mu.Lock()
			got[d.Reason]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if got[enforce.ReasonFailOpen] != OverloadCalls {
		t.Errorf("%d calls at once over a store that answers nothing: %v, want every one fail-open (none shed)", OverloadCalls, got)
	}
}

func overload(t *testing.T, store enforce.CounterStore, build BuildEnforcer, failClosed bool) {
	one, big := 1, 1_000_000
	// Every caller may call once an hour: the hog has, each fresh caller
	// has not.
	hog := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "all",
		WindowSeconds: 3600, UserMaxRequests: &one, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true}
	shared := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "big",
		WindowSeconds: 3600, MaxRequests: &big, Enabled: true, Mode: ratelimit.ModeEnforce}
	hog.ID, shared.ID = hog.Key(), shared.Key()
	// A backend timeout longer than a loaded test machine keeps a round
	// trip's goroutines from running (10,000 goroutines start at once,
	// under the race detector, beside other test binaries on two cores:
	// 2 s was not always enough): the store answers every round trip it is
	// sent, so only shedding can refuse a fresh caller. The store answers
	// each round trip 40 ms late, so the burst (5,000 fresh calls, 32 a
	// round trip) still takes longer than the timeout, and decisions are
	// shed for waiting as well as for the queue's bound.
	e := build(t, enforce.Options{FailClosed: failClosed, BackendTimeout: 5 * time.Second, Workers: 1},
		Slowed(store, 40*time.Millisecond), StaticSource(enforce.State{Definitions: append(Sentinels(), hog, shared)}))
	call := func(user string) enforce.Call {
		return enforce.Call{Username: user, TargetType: ratelimit.EntityMCPServer, TargetName: "big"}
	}
	ctx := context.Background()
	if d, err := e.Check(ctx, call("hog")); err != nil || !d.Allowed {
		t.Fatalf("the hog's first call: allowed %v, reason %q, %v", d.Allowed, d.Reason, err)
	}
	if d, _ := e.Check(ctx, call("hog")); d.Allowed || d.Reason != enforce.ReasonThrottled {
		t.Fatalf("the hog's second call: allowed %v, reason %q; want throttled", d.Allowed, d.Reason)
	}

	type tally struct{ hog, fresh map[string]int }
	var mu sync.Mutex
	got := tally{hog: map[string]int{}, fresh: map[string]int{}}
	errs := map[string]error{} // one error of each outcome, for the failure message
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range OverloadCalls {
		wg.Go(func() {
			c, who := call("hog"), got.hog
			if i%2 == 1 {
				c, who = call(fmt.Sprintf("fresh%d", i)), got.fresh
			}
			<-start
			d, err := e.Check(ctx, c)
			reason := d.Reason
			if d.Allowed {
				reason = "admitted " + reason
			}
			mu.Lock()
			who[reason]++
			if err != nil {
				errs[reason] = err
			}
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()

	admitted := 0
	shed := enforce.ReasonOverloaded
	if failClosed {
		shed = enforce.ReasonFailClosed
	}
	for reason, n := range got.hog {
		if reason != enforce.ReasonThrottled {
			t.Errorf("the used-up caller: %d calls %s (%v), want only throttled (%v)", n, reason, errs[reason], got.hog)
		}
	}
	for reason, n := range got.fresh {
		switch reason {
		case "admitted " + enforce.ReasonAllowed:
			admitted += n
		case shed:
		default:
			t.Errorf("fresh callers: %d calls %s (%v), want only allowed or %s (%v)", n, reason, errs[reason], shed, got.fresh)
		}
	}
	if got.fresh[shed] == 0 {
		t.Errorf("no call of %d at once was shed (hog %v, fresh %v): the burst did not overload the Enforcer", OverloadCalls, got.hog, got.fresh)
	}
	// Shed calls took nothing: the shared limit counts exactly the hog's
	// first call and the admitted ones (a peek takes nothing).
	d, err := e.Peek(ctx, call("after"))
	if err != nil || !d.Allowed {
		t.Fatalf("a call after the burst: allowed %v, reason %q, %v", d.Allowed, d.Reason, err)
	}
	for _, g := range d.Gates {
		if g.DefinitionID == shared.ID {
			if used := int64(big) - g.Remaining; used != int64(admitted)+1 {
				t.Errorf("the shared limit counts %d, want the %d admitted calls and the hog's first", used, admitted)
			}
			return
		}
	}
	t.Errorf("a call after the burst was not checked against %s: %+v", shared.ID, d.Gates)
}
