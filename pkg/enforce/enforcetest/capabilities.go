package enforcetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// capabilities checks a store's declarations against its methods: a
// capability it declares works, one it does not declare answers an error
// wrapping enforce.ErrNotImplemented and changes nothing. The
// declarations do not change between calls.
func capabilities(t *testing.T, s enforce.CounterStore) {
	ctx := context.Background()
	caps := s.Capabilities()
	if again := s.Capabilities(); again != caps {
		t.Fatalf("Capabilities changed between calls: %+v, then %+v", caps, again)
	}
	t.Logf("%s declares %+v", s.BackendName(), caps)
	a := algorithms[enforce.AlgorithmFixedWindow]
	now := a.start()

	back := a.gate("capability-give-back", 5)
	take(t, s, call(now, 3, back))
	err := s.ReturnUnused(ctx, []enforce.Return{{Gate: back, Units: 2, Taken: now, Now: now}}, time.Now().Add(hangBound))
	switch got := countOf(t, s, now, back); {
	case caps.GiveBack && err != nil:
		t.Errorf("declares GiveBack, ReturnUnused: %v", err)
	case caps.GiveBack && got != 1:
		t.Errorf("declares GiveBack: 3 taken, 2 given back, the count is %d, want 1", got)
	case !caps.GiveBack && !errors.Is(err, enforce.ErrNotImplemented):
		t.Errorf("does not declare GiveBack, ReturnUnused answered %v, want an error wrapping enforce.ErrNotImplemented", err)
	case !caps.GiveBack && got != 3:
		t.Errorf("does not declare GiveBack, yet ReturnUnused changed the count to %d (want 3)", got)
	}

	reset := a.gate("capability-reset", 5)
	take(t, s, call(now, 3, reset))
	err = s.Reset(ctx, []enforce.CounterGate{reset}, now, time.Now().Add(hangBound))
	switch got := countOf(t, s, now, reset); {
	case caps.Reset && err != nil:
		t.Errorf("declares Reset, Reset: %v", err)
	case caps.Reset && got != 0:
		t.Errorf("declares Reset: the count after a reset is %d, want 0", got)
	case !caps.Reset && !errors.Is(err, enforce.ErrNotImplemented):
		t.Errorf("does not declare Reset, Reset answered %v, want an error wrapping enforce.ErrNotImplemented", err)
	case !caps.Reset && got != 3:
		t.Errorf("does not declare Reset, yet Reset changed the count to %d (want 3)", got)
	}

	localTake(t, s, caps, a, now)
}

// answer is room for the answer of a call of n gates (TakeLocal's into).
func answer(n int) enforce.TakeResult {
	return enforce.TakeResult{Room: make([]bool, n), States: make([]enforce.GateState, n)}
}

// localTake checks TakeLocal against the Local declaration: a store that
// declares it decides each call as Take would, its misses reaching the
// store through next (the check's next is the store's own Take, as the
// Enforcer's batcher is); one that does not answers an error wrapping
// enforce.ErrNotImplemented, without calling next or counting.
func localTake(t *testing.T, s enforce.CounterStore, caps enforce.CounterCapabilities, a algorithm, now time.Time) {
	ctx := context.Background()
	g := a.gate("capability-local", 5)
	nexts := 0
	next := func(ctx context.Context, req enforce.TakeRequest) (enforce.TakeResult, error) {
		nexts++
		res, err := s.Take(ctx, []enforce.TakeRequest{req}, time.Now().Add(hangBound))
		if err != nil {
			return enforce.TakeResult{}, err
		}
		return res[0], nil
	}
	if !caps.Local {
		_, err := s.TakeLocal(ctx, call(now, 3, g), answer(1), next)
		if !errors.Is(err, enforce.ErrNotImplemented) {
			t.Errorf("does not declare Local, TakeLocal answered %v, want an error wrapping enforce.ErrNotImplemented", err)
		}
		if nexts != 0 || countOf(t, s, now, g) != 0 {
			t.Errorf("does not declare Local, yet TakeLocal sent %d calls on or counted %d", nexts, countOf(t, s, now, g))
		}
		return
	}
	// Calls of cost 2 on a limit of 5: exactly 2 admitted, whether the
	// store decides them in memory or sends them through next.
	admitted := 0
	for range 4 {
		res, err := s.TakeLocal(ctx, call(now, 2, g), answer(1), next)
		if err != nil {
			t.Fatalf("declares Local, TakeLocal: %v", err)
		}
		if len(res.Room) != 1 || len(res.States) != 1 {
			t.Fatalf("declares Local, TakeLocal answered %d rooms and %d states for one gate", len(res.Room), len(res.States))
		}
		if res.Allowed {
			admitted++
		}
	}
	if admitted != 2 {
		t.Errorf("declares Local: calls of cost 2 on a limit of 5 admitted %d times, want 2", admitted)
	}
}

// resets: after a Reset the gate's key counts from zero, in every window
// that counts at now (a sliding window's previous one too), and other
// keys keep their counts. A store that does not declare Reset answers
// ErrNotImplemented instead (the capabilities case checks that).
func resets(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g, other := a.gate("reset-me", 10), a.gate("reset-not-me", 10)
	// One call a window ago (the sliding window's previous window: it
	// weighs on now), one now.
	take(t, s, call(now.Add(-g.Window), 3, g, other))
	take(t, s, call(now, 3, g, other))
	err := s.Reset(context.Background(), []enforce.CounterGate{g}, now, time.Now().Add(hangBound))
	if !s.Capabilities().Reset {
		if !errors.Is(err, enforce.ErrNotImplemented) {
			t.Fatalf("the store does not declare Reset, and Reset answered %v, want enforce.ErrNotImplemented", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Reset: %v", err)
	}
	st := take(t, s, peekOf(now, 1, g))[0].States[0]
	if st.Count != 0 || st.Previous != 0 || st.TAT.After(now) {
		t.Errorf("after the reset the key holds %+v, want nothing counted", st)
	}
	if got := countOf(t, s, now, other); got != 3 {
		t.Errorf("the key not reset has used %d, want its 3", got)
	}
	expect(t, "the whole limit after the reset", take(t, s, call(now, 10, g))[0], true, []int64{10}, []bool{true})
	expect(t, "one past it", take(t, s, call(now, 1, g))[0], false, []int64{10}, []bool{false})
}
