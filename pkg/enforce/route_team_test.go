package enforce_test

import (
	"fmt"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A tier's team_max_requests is one bucket per team that every caller of
// the team draws from: two users of one team share it, another team is
// untouched, and a call without a team is not gated by it. The refusal
// names the team dimension, and the key parses back with the team as its
// caller and the tier as its target (what `rlctl counters get` lists).
func TestRouteTierPerTeam(t *testing.T) {
	t.Parallel()
	high := route("high", 60, "/tokens/*")
	high.UserMaxRequests, high.TeamMaxRequests = ptr(10), ptr(3)
	f := newMemFixture(t, high)
	call := func(user, team string) enforce.Call {
		c := routeCall("POST", "/tokens/new", user, "198.51.100.7")
		c.Team = team
		return c
	}
	steps := []struct {
		call    enforce.Call
		allowed bool
	}{
		{call("alice", "acme"), true},
		{call("bob", "acme"), true},
		{call("alice", "acme"), true},
		// acme has used its 3, whichever member asks.
		{call("bob", "acme"), false},
		{call("carol", "acme"), false},
		// another team is its own bucket.
		{call("dave", "globex"), true},
		// no team: only the user dimension gates it.
		{call("alice", ""), true},
		{call("erin", ""), true},
	}
	for i, s := range steps {
		d := f.Check(s.call)
		if d.Allowed != s.allowed {
			t.Fatalf("step %d %+v: allowed %v, want %v (%+v)", i+1, s.call, d.Allowed, s.allowed, d)
		}
		if !s.allowed && (len(d.Denied) != 1 || d.Denied[0].Dimension != enforce.DimensionTeam ||
			d.Denied[0].DefinitionID != "target:route:high:60") {
			t.Errorf("step %d: denied %+v, want one gate of dimension team", i+1, d.Denied)
		}
		if s.call.Team == "" {
			for _, g := range d.Gates {
				if g.Dimension == enforce.DimensionTeam {
					t.Errorf("step %d: a call without a team met a team gate %+v", i+1, g)
				}
			}
		}
	}
	f.Check(call("dave", "globex"))
	var keys []string
	for _, g := range f.rec.gates() {
		keys = append(keys, g.Key)
	}
	if want := "[ct|60|team:globex|route:high ct|60|user:dave|route:high]"; fmt.Sprint(keys) != want {
		t.Fatalf("counter keys %v, want %s", keys, want)
	}
	k, err := counterkey.Parse(keys[0])
	if err != nil || k.Caller != "team:globex" || k.OnTarget() != ratelimit.EntityRoute+":high" || k.WindowSeconds != 60 {
		t.Errorf("ParseCounterKey(%q) = %+v, %v", keys[0], k, err)
	}
	if _, err := counterkey.Parse("ct|60|team:globex|mcp_server:x"); err == nil {
		t.Error("a team caller on a non-route target parsed")
	}
}
