// Package enforcetest is the conformance suite every enforce.CounterStore
// must pass, and the test doubles an Enforcer test needs, in the manner of
// testing/fstest.TestFS and net/http/httptest.
//
// A store's own test calls TestCounterStore with an opener that gives a
// fresh, empty store per subtest:
//
//	func TestConformance(t *testing.T) {
//		enforcetest.TestCounterStore(t, func(t *testing.T) enforce.CounterStore {
//			return memory.New()
//		})
//	}
//
// The suite drives Take, Reset and Sweep directly, choosing every
// TakeRequest.Now, so windows roll over and buckets refill without
// waiting. It checks the store's declared capabilities against its
// methods (a capability declared works; one not declared answers
// enforce.ErrNotImplemented and changes nothing), so no store lacks one
// silently. Checks that hold for any algorithm (cost, all or nothing,
// shadow gates, peek, batches, concurrency, keys, deadlines, Reset) run
// once per entry of the
// algorithms table; each entry adds the checks of its own notion of time
// (the fixed window: roll-over at the epoch-aligned boundary, and Sweep;
// the sliding window: the boundary where the fixed window admits twice its
// limit, the previous window's weight, and Sweep; the token bucket: burst
// then deny at a frozen clock, refill, never above the burst, the rounding
// of its emission interval, and Sweep), every value exact as
// pkg/enforce/algorithm computes it. Then gates of different algorithms
// are mixed in one call: all or nothing, shadow, batches, concurrency. A
// new algorithm is one entry there, and every store runs its cases; a
// store that does not count every algorithm yet says which it does
// (Opts.Algorithms) and the others are skipped.
//
// For the fail policies of an Enforcer: Failing and Hanging wrap a store
// so it errors or answers nothing, StaticSource is an in-memory
// enforce.Source, and TestFailPolicies checks the fail-open and
// fail-closed decisions given a way to build an Enforcer. TestStalledStore
// checks, on a store whose server the test can stall for real
// (Stallable), that the decisions the fail policy answered during the
// stall consumed nothing.
package enforcetest
