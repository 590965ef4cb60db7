package enforce_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestCountOver: a call whose descriptors count over their limits
// (DescriptorRequest.CountOver, Envoy's counting) counts a refused hit on
// a fixed window, past the limit, so that a later smaller call is refused;
// the decision is the same as without it. Sliding windows and token
// buckets keep all or nothing. Over a lease layer the same.
func TestCountOver(t *testing.T) {
	t.Parallel()
	for _, leases := range []bool{false, true} {
		for _, alg := range []string{ratelimit.AlgorithmFixedWindow, ratelimit.AlgorithmSlidingWindow, ratelimit.AlgorithmTokenBucket} {
			t.Run(fmt.Sprintf("%s leases %v", alg, leases), func(t *testing.T) {
				t.Parallel()
				d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 3600,
					MaxRequests: ptr(20), Enabled: true, Algorithm: alg}
				d.Domain, d.Descriptor = "edge", []ratelimit.DescriptorEntry{{Key: "k"}}
				d.Name = ratelimit.DescriptorName(d.Domain, d.Descriptor)
				f := newMemFixtureOpts(t, enforce.Options{}, d)
				if leases {
					f, _ = newLeasedFixture(t, lease.Options{All: true, Time: time.Hour}, d)
				}
				call := func(cost int64) enforce.Call {
					return enforce.Call{Cost: cost, Descriptors: &enforce.DescriptorRequest{Domain: "edge", CountOver: true,
						Descriptors: []enforce.Descriptor{{Entries: []ratelimit.DescriptorEntry{{Key: "k", Value: "v"}}}}}}
				}
				if got := f.Check(call(14)); !got.Allowed || got.Remaining != 6 {
					t.Fatalf("14 of 20: %+v, want allowed with 6 left", got)
				}
				if got := f.Check(call(10)); got.Allowed {
					t.Fatalf("10 more: %+v, want refused", got)
				}
				got := f.Check(call(1))
				if alg == ratelimit.AlgorithmFixedWindow {
					if got.Allowed || got.Gates[0].Count != 25 {
						t.Errorf("1 more after 10 refused: allowed %v count %d, want refused with 25 counted, as Envoy's counter", got.Allowed, got.Gates[0].Count)
					}
					return
				}
				if !got.Allowed || got.Remaining != 5 {
					t.Errorf("1 more after 10 refused: %+v, want allowed with 5 left (the refused 10 not counted)", got)
				}
			})
		}
	}
}
