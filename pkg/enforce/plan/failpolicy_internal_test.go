package plan

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestSharedBucketTakesTheStrictestFailPolicy: two caller definitions for
// everyone on one window share one bucket per caller, and the bucket's
// gate takes the stricter of their fail policies (closed, then degrade,
// then open, then none), whichever definition's limit applies;
// fail_closed alone is closed.
func TestSharedBucketTakesTheStrictestFailPolicy(t *testing.T) {
	t.Parallel()
	const open, closed, deg = ratelimit.FailPolicyOpen, ratelimit.FailPolicyClosed, ratelimit.FailPolicyDegrade
	for _, c := range []struct {
		a, b       string
		aFailClose bool
		want       string
	}{
		{"", "", false, ""},
		{"", open, false, open},
		{open, deg, false, deg},
		{deg, open, false, deg},
		{deg, closed, false, closed},
		{closed, "", false, closed},
		{"", deg, true, closed},
	} {
		defs := map[string]ratelimit.Definition{}
		for _, d := range []struct {
			name, policy string
			limit        int
			failClosed   bool
		}{{"a", c.a, 10, c.aFailClose}, {"b", c.b, 5, false}} {
			limit := d.limit
			def := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: d.name, WindowSeconds: 60,
				UserMaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true, FailPolicy: d.policy, FailClosed: d.failClosed}
			def.ID = def.Key()
			defs[def.ID] = def
		}
		idx := NewIndex(defs)
		gates := Gates(&idx, NewMembers(), Target{Type: ratelimit.EntityMCPServer, Name: "s"}, Caller{Caller: "user:u", UserKey: "user:u"},
			nil, false, time.Now(), nil)
		if len(gates) != 1 || gates[0].Limit != 5 {
			t.Fatalf("%+v: %d gates (limit %d), want one shared bucket of limit 5", c, len(gates), gates[0].Limit)
		}
		if got := gates[0].FailPolicy(); got != c.want || gates[0].FailClosed() != (c.want == closed) {
			t.Errorf("a %q (fail_closed %v), b %q: the bucket's policy %q (FailClosed %v), want %q", c.a, c.aFailClose, c.b, got, gates[0].FailClosed(), c.want)
		}
	}
}
