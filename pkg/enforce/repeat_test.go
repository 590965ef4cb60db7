package enforce_test

import (
	"fmt"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestCounterNamedTwice: a descriptor sent twice in one call takes its
// counter's cost once per mention, all or nothing, in every algorithm:
// the call passes only if both fit, each mention's gate reports the
// counter's own limit and what is left after both, and a call that does
// not fit takes nothing.
func TestCounterNamedTwice(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{ratelimit.AlgorithmFixedWindow, ratelimit.AlgorithmSlidingWindow, ratelimit.AlgorithmTokenBucket} {
		t.Run(alg, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, enforce.Options{})
			d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 3600,
				MaxRequests: ptr(3), Enabled: true, Algorithm: alg}
			d.Domain, d.Descriptor = "edge", []ratelimit.DescriptorEntry{{Key: "k"}}
			d.Name = ratelimit.DescriptorName(d.Domain, d.Descriptor)
			f.Def(d)
			kv := enforce.Descriptor{Entries: []ratelimit.DescriptorEntry{{Key: "k", Value: "v"}}}
			call := func(n int) enforce.Call {
				c := enforce.Call{Descriptors: &enforce.DescriptorRequest{Domain: "edge"}}
				for range n {
					c.Descriptors.Descriptors = append(c.Descriptors.Descriptors, kv)
				}
				return c
			}
			gates := func(dec enforce.Decision) string {
				s := fmt.Sprint(dec.Allowed)
				for _, g := range dec.Gates {
					s += fmt.Sprintf(" %d:%d/%d", g.Descriptor, g.Remaining, g.Limit)
				}
				return s
			}
			// Two more do not fit in the one left: nothing taken (a
			// sliding window then says 0 left, at most what is: repeat.go).
			refused := "false 1:1/3 2:1/3"
			if alg == ratelimit.AlgorithmSlidingWindow {
				refused = "false 1:0/3 2:0/3"
			}
			for i, want := range []string{
				"true 1:1/3 2:1/3", // two of three taken
				refused,
				"true 1:0/3", // the one left
				"false 1:0/3 2:0/3",
			} {
				n := 2
				if i == 2 {
					n = 1
				}
				if got := gates(f.Check(call(n))); got != want {
					t.Errorf("call %d (%d mentions): %s, want %s", i+1, n, got, want)
				}
			}
		})
	}
}
