package enforcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// ErrInjected is the error the fail-policy checks make a store fail with.
var ErrInjected = errors.New("enforcetest: injected counter store failure")

// BuildEnforcer builds an Enforcer over counters and src with opts (the
// suite sets FailClosed and BackendTimeout in it); it registers the
// Enforcer's Close with t.Cleanup. With the seams' constructor that is
//
//	e, err := enforce.New(ctx, enforce.Options{Counters: counters, Source: src, ...})
type BuildEnforcer func(t *testing.T, opts enforce.Options, counters enforce.CounterStore, src enforce.Source) *enforce.Enforcer

// Build is the BuildEnforcer of enforce.New with opts as given, closed
// when the test ends.
func Build(t *testing.T, opts enforce.Options, counters enforce.CounterStore, src enforce.Source) *enforce.Enforcer {
	t.Helper()
	opts.Counters, opts.Source = counters, src
	e, err := enforce.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// BuildLeasing is Build over pkg/enforce/lease's layer wrapping
// counters, leasing every gate (lease.Options{All: true}) on opts's clock
// and within its BackendTimeout; the layer is closed after the Enforcer
// when the test ends.
func BuildLeasing(t *testing.T, opts enforce.Options, counters enforce.CounterStore, src enforce.Source) *enforce.Enforcer {
	t.Helper()
	layer := newLayer(t, counters, lease.Options{All: true, Now: opts.Now, Timeout: opts.BackendTimeout})
	return Build(t, opts, layer, src)
}

// PolicyState is the state the fail-policy checks enforce: a target
// mcp_server "s" limited to 100 calls a minute (fail_closed as given) and
// a target "other" with the same limit, never fail_closed.
func PolicyState(definitionFailClosed bool) enforce.State {
	return policyState(enforce.AlgorithmFixedWindow, definitionFailClosed)
}

// policyState is PolicyState with both definitions counting with algo.
func policyState(algo enforce.Algorithm, definitionFailClosed bool) enforce.State {
	limit := 100
	s := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s",
		WindowSeconds: 60, MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, FailClosed: definitionFailClosed,
		Algorithm: string(algo)}
	other := s
	other.Name, other.FailClosed = "other", false
	s.ID, other.ID = s.Key(), other.Key()
	return enforce.State{Definitions: append(Sentinels(), s, other)}
}

func policyCall(target string) enforce.Call {
	return enforce.Call{Username: "u", TargetType: ratelimit.EntityMCPServer, TargetName: target}
}

// TestFailPolicies checks the Enforcer's decisions when its counter store
// fails, over stores built by newStore (fresh per subtest) and Enforcers
// built by build:
//
//   - a store that errors: fail open by default (allowed, reason
//     fail-open), fail closed with Options.FailClosed or a fail_closed
//     definition (denied, reason fail-closed), the error returned with the
//     decision and wrapping the store's; a call that does not touch the
//     fail_closed definition still fails open; once the store is
//     repaired the same call is allowed by its counters;
//   - a store that hangs: the BackendTimeout ends the wait and the fail
//     policy decides, the same way; once released, calls are counted.
//
// Every case runs once per algorithm (both definitions counting with it;
// opts, at most one, may narrow the algorithms as for TestCounterStore).
func TestFailPolicies(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer, opts ...Opts) {
	t.Helper()
	for _, algo := range optsOf(opts).algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			testFailPolicies(t, algo, newStore, build)
		})
	}
}

func testFailPolicies(t *testing.T, algo enforce.Algorithm, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer) {
	cases := []struct {
		name           string
		globalClosed   bool
		definitionFail bool
		want           string
	}{
		{"fail open by default", false, false, enforce.ReasonFailOpen},
		{"fail closed globally", true, false, enforce.ReasonFailClosed},
		{"fail closed per definition", false, true, enforce.ReasonFailClosed},
	}
	faults := []struct {
		name string
		wrap func(enforce.CounterStore) (enforce.CounterStore, func())
	}{
		{"store errors", func(s enforce.CounterStore) (enforce.CounterStore, func()) {
			f := Failing(s, ErrInjected)
			return f, f.Repair
		}},
		{"store hangs", func(s enforce.CounterStore) (enforce.CounterStore, func()) {
			h := Hanging(s)
			return h, h.Release
		}},
	}
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					ctx := context.Background()
					store, repair := fault.wrap(newStore(t))
					e := build(t, enforce.Options{FailClosed: c.globalClosed, BackendTimeout: 50 * time.Millisecond},
						store, StaticSource(policyState(algo, c.definitionFail)))
					got, err := boundedCheck(t, e, policyCall("s"))
					if err == nil {
						t.Error("the store's failure was not returned with the decision")
					} else if fault.name == "store errors" && !errors.Is(err, ErrInjected) {
						t.Errorf("error %v does not wrap the store's error", err)
					}
					if got.Reason != c.want || got.Allowed != (c.want == enforce.ReasonFailOpen) {
						t.Errorf("decision = allowed %v, reason %q; want reason %q", got.Allowed, got.Reason, c.want)
					}
					if c.definitionFail {
						// Only calls that hit the fail-closed definition are denied.
						if other, _ := boundedCheck(t, e, policyCall("other")); !other.Allowed || other.Reason != enforce.ReasonFailOpen {
							t.Errorf("a call not touching the fail_closed definition: allowed %v, reason %q; want fail-open",
								other.Allowed, other.Reason)
						}
					}
					repair()
					// What the failed calls took, read through a second
					// Enforcer on the same counters whose deadline a busy
					// machine cannot miss (e's 50 ms can be, which would
					// make this call a failed one too).
					steady := build(t, enforce.Options{FailClosed: c.globalClosed, BackendTimeout: 10 * time.Second},
						store, StaticSource(policyState(algo, c.definitionFail)))
					got, err = steady.Check(ctx, policyCall("s"))
					if err != nil || !got.Allowed || got.Reason != enforce.ReasonAllowed {
						t.Errorf("after the store recovered: allowed %v, reason %q, err %v; want allowed", got.Allowed, got.Reason, err)
					}
					if got.Limit != 100 || got.Remaining != 99 {
						t.Errorf("after the store recovered: limit %d remaining %d, want 100 and 99 (failed calls took nothing)",
							got.Limit, got.Remaining)
					}
					// The Enforcer that saw the failure recovers without a
					// restart: its next decisions are decisions again
					// (retried only while its short deadline is missed).
					deadline := time.Now().Add(hangBound)
					for {
						got, err = e.Check(ctx, policyCall("s"))
						if err == nil && got.Allowed && got.Reason == enforce.ReasonAllowed {
							break
						}
						if !errors.Is(err, enforce.ErrTimedOut) && !errors.Is(err, enforce.ErrOutcomeUnknown) || time.Now().After(deadline) {
							t.Errorf("the failed Enforcer after the store recovered: allowed %v, reason %q, err %v; want allowed",
								got.Allowed, got.Reason, err)
							break
						}
					}
				})
			}
		})
	}
}

// boundedCheck is e.Check, failing the test if it has not returned by
// hangBound: an Enforcer whose decisions wait on a hung store forever.
func boundedCheck(t *testing.T, e *enforce.Enforcer, c enforce.Call) (enforce.Decision, error) {
	t.Helper()
	type answer struct {
		d   enforce.Decision
		err error
	}
	done := make(chan answer, 1)
	go func() {
		d, err := e.Check(context.Background(), c)
		done <- answer{d, err}
	}()
	select {
	case a := <-done:
		return a.d, a.err
	case <-time.After(hangBound):
		t.Fatalf("Check did not return within %v: the Enforcer waits on its counter store past BackendTimeout", hangBound)
		return enforce.Decision{}, nil
	}
}

// TestFailOpenKeepsUsedUpGates checks, for every algorithm, over stores
// built by newStore, that a store outage does not let through a caller
// whose limit this Enforcer saw used up: with the store failing, the
// fail-open policy allows a fresh call but refuses (throttled) one on a
// gate the Enforcer last saw without room, unless the gate's limit has
// been raised since, and until the wait that gate reported has passed;
// then the call fails open too.
func TestFailOpenKeepsUsedUpGates(t *testing.T, newStore func(t *testing.T) enforce.CounterStore, build BuildEnforcer, opts ...Opts) {
	t.Helper()
	for _, algo := range optsOf(opts).algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			clock := newLeaseClock()
			failing := Failing(newStore(t), ErrInjected)
			failing.Repair() // healthy until the outage below
			one := 1
			perCaller := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "all",
				WindowSeconds: 60, UserMaxRequests: &one, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true,
				Algorithm: string(algo)}
			perCaller.ID = perCaller.Key()
			src := StaticSource(enforce.State{Definitions: append(Sentinels(), perCaller)})
			e := build(t, enforce.Options{Now: clock.now, BackendTimeout: time.Second, SweepInterval: -1, CacheTTL: 24 * time.Hour},
				failing, src)
			call := func(user string) enforce.Call {
				return enforce.Call{Username: user, TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
			}
			ctx := context.Background()
			if d, err := e.Check(ctx, call("hog")); err != nil || !d.Allowed {
				t.Fatalf("the hog's first call: allowed %v, %v", d.Allowed, err)
			}
			used, err := e.Check(ctx, call("hog"))
			if err != nil || used.Reason != enforce.ReasonThrottled {
				t.Fatalf("the hog's second call: %s, %v; want throttled", used.Reason, err)
			}

			failing.Break()
			d, err := boundedCheck(t, e, call("hog"))
			if err == nil || d.Allowed || d.Reason != enforce.ReasonThrottled || d.RetryAfter <= 0 {
				t.Errorf("the used-up caller during the outage: allowed %v, reason %s, retry after %v, %v; want throttled from memory, with the store's error",
					d.Allowed, d.Reason, d.RetryAfter, err)
			}
			if d, _ := boundedCheck(t, e, call("fresh")); !d.Allowed || d.Reason != enforce.ReasonFailOpen {
				t.Errorf("a fresh caller during the outage: allowed %v, reason %s; want fail-open", d.Allowed, d.Reason)
			}
			// The limit raised during the outage: what was used up at 1
			// may have room at 2, so the hog is no longer known used up.
			two := 2
			raised := perCaller
			raised.UserMaxRequests = &two
			src.Set(enforce.State{Definitions: append(Sentinels(), raised)})
			if err := e.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if d, _ := boundedCheck(t, e, call("hog")); !d.Allowed || d.Reason != enforce.ReasonFailOpen {
				t.Errorf("the hog once its limit was raised: allowed %v, reason %s; want fail-open", d.Allowed, d.Reason)
			}
			src.Set(enforce.State{Definitions: append(Sentinels(), perCaller)})
			if err := e.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			clock.advance(used.RetryAfter)
			if d, _ := boundedCheck(t, e, call("hog")); !d.Allowed || d.Reason != enforce.ReasonFailOpen {
				t.Errorf("the hog once its wait has passed: allowed %v, reason %s; want fail-open", d.Allowed, d.Reason)
			}
		})
	}
}
