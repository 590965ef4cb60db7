package auththrottle_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
)

// liftingStore lifts a lockout while the store answers a question about
// it: the answer (locked) was read before the lift and arrives after the
// lift's notice, as it can when an administrator lifts a lockout while a
// call from the address is being checked.
type liftingStore struct {
	*memory.Store
	lift func()
}

func (s *liftingStore) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	res, err := s.Store.Take(ctx, reqs, deadline)
	if s.lift != nil {
		s.lift()
	}
	return res, err
}

// A lifted lockout is not refused again from memory: Forget drops what a
// replica learned, and a store answer read before the lift is not cached
// after it (the next check asks the store, which no longer holds it).
func TestThrottleForgetsALiftedLockout(t *testing.T) {
	t.Parallel()
	clk := authClock()
	st := &liftingStore{Store: memory.New()}
	th, err := auththrottle.New(st, auththrottle.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ip := netip.MustParseAddr("203.0.113.7")
	for range 5 {
		if _, err := th.Report(ctx, ip, "", auththrottle.Failure); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := th.Check(ctx, ip); !st.Locked {
		t.Fatal("five failures did not lock")
	}
	lift := func() {
		lockout := enforce.CounterGate{Key: counterkey.AuthLockout("gateway", th.Key(ip)).String(), Algorithm: enforce.AlgorithmTokenBucket, Window: 5 * time.Minute, Limit: 1}
		if err := st.Reset(ctx, []enforce.CounterGate{lockout}, clk.Now(), time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}

	// Forgotten after the lift: the store answers, not locked.
	lift()
	if st, _ := th.Check(ctx, ip); !st.Locked {
		t.Fatal("the cache no longer holds the lockout before Forget: nothing to test")
	}
	th.Forget(th.Key(ip))
	if st, _ := th.Check(ctx, ip); st.Locked {
		t.Fatalf("after the lift and Forget: %+v, want not locked", st)
	}

	// Locked again; this time the lift lands while the store answers.
	clk.Advance(2 * time.Second)
	for range 5 {
		th.Report(ctx, ip, "", auththrottle.Failure)
	}
	th.Forget() // every address: the next check asks the store
	st.lift = func() { st.lift = nil; lift(); th.Forget(th.Key(ip)) }
	if s, _ := th.Check(ctx, ip); !s.Locked {
		t.Fatal("the store's answer read before the lift says locked")
	}
	if n, locked := th.Tracked(); locked != 0 {
		t.Fatalf("cache holds %d entries, %d lockouts: the answer read before the lift was cached after it", n, locked)
	}
	if s, _ := th.Check(ctx, ip); s.Locked {
		t.Fatalf("after a lift that landed during a check: %+v, want not locked", s)
	}
}
