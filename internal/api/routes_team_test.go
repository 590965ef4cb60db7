package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A tier's team_max_requests, stored through the API, is one bucket per
// team through POST /api/check: two users of one team share it and the
// refusal names the team dimension; another team and a call without a
// team pass. The bucket is listed by its caller team:<name> and by the
// tier's target (a refused call counts on none of its buckets).
func TestRouteTierTeamThroughCheck(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	high := routeDef("high", "/tokens/*")
	high.Algorithm, high.UserMaxRequests, high.TeamMaxRequests, high.TeamBurst = ratelimit.AlgorithmTokenBucket, ptr(10), ptr(2), ptr(2)
	define(t, env, admin, high)
	got, err := admin.GetDefinition(t.Context(), "target:route:high:60")
	if err != nil || got.TeamMaxRequests == nil || *got.TeamMaxRequests != 2 || got.TeamBurst == nil || *got.TeamBurst != 2 {
		t.Fatalf("stored route: %+v, %v", got, err)
	}
	check := func(user, team string) checkResult {
		t.Helper()
		body := fmt.Sprintf(`{"method":"POST","path":"/tokens/new","username":%q,"team":%q,"client_ip":"198.51.100.7"}`, user, team)
		return decodeCheck(t, send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: body}))
	}
	for i, s := range []struct {
		user, team string
		allowed    bool
	}{
		{"alice", "acme", true}, {"bob", "acme", true}, {"carol", "acme", false},
		{"dave", "globex", true}, {"alice", "", true},
	} {
		r := check(s.user, s.team)
		if r.Allowed != s.allowed {
			t.Fatalf("step %d %s of %q: %+v, want allowed %v", i+1, s.user, s.team, r, s.allowed)
		}
		var dims []string
		for _, g := range r.Gates {
			dims = append(dims, fmt.Sprint(g["dimension"]))
			if !s.allowed && g["remaining"].(float64) == 0 && g["dimension"] != "team" {
				t.Errorf("step %d: gate %v used up, want only the team's", i+1, g)
			}
		}
		slices.Sort(dims)
		want := "[team user]"
		if s.team == "" {
			want = "[user]"
		}
		if fmt.Sprint(dims) != want {
			t.Errorf("step %d: gate dimensions %v, want %s", i+1, dims, want)
		}
	}
	teamBucket := func(team string) string {
		k := counterkey.CallerTarget(60, "team:"+team, "route:high")
		k.Algorithm = enforce.AlgorithmTokenBucket
		return k.String()
	}
	counters, err := countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Caller: "team:acme"}, 0))
	if err != nil || len(counters) != 1 || counters[0].Key != teamBucket("acme") {
		t.Errorf("counters of team:acme: %+v, %v", counters, err)
	}
	counters, err = countersOf(admin.ListCounters(t.Context(), client.CounterSelector{Target: "route:high"}, 0))
	var keys []string
	for _, c := range counters {
		keys = append(keys, c.Key)
	}
	slices.Sort(keys)
	if err != nil || len(keys) != 5 || keys[0] != teamBucket("acme") || keys[1] != teamBucket("globex") {
		t.Errorf("counters of route:high: %v, %v", keys, err)
	}
}

// team_max_requests and team_burst are refused with a 400 naming the field:
// off a route, below 1, a burst without a token bucket, on an exempt route.
func TestRouteTierTeamValidation(t *testing.T) {
	t.Parallel()
	_, admin := validateEnv(t)
	for _, c := range []struct {
		def   ratelimit.Definition
		field string
	}{
		{func() ratelimit.Definition {
			d := targetLimit("mcp_server", "srv", 60, 5)
			d.TeamMaxRequests = ptr(2)
			return d
		}(), "team_max_requests"},
		{func() ratelimit.Definition {
			d := routeDef("t", "/x/*")
			d.TeamMaxRequests = ptr(0)
			return d
		}(), "team_max_requests"},
		{func() ratelimit.Definition {
			d := routeDef("t", "/x/*")
			d.TeamMaxRequests, d.TeamBurst = ptr(5), ptr(9)
			return d
		}(), "team_burst"},
		{func() ratelimit.Definition {
			d := routeDef("t", "/x/*")
			d.Exempt, d.TeamMaxRequests = true, ptr(5)
			return d
		}(), "team_max_requests"},
	} {
		_, err := admin.PutDefinition(t.Context(), c.def, client.WriteOptions{})
		var ve *client.APIError
		if !errors.As(err, &ve) || ve.StatusCode != http.StatusBadRequest || len(ve.Errors) != 1 || ve.Errors[0].Field != c.field {
			t.Errorf("put %+v: %v, want a 400 naming %s", c.def, err, c.field)
		}
	}
	// A route whose only limit is per team is valid.
	d := routeDef("teamonly", "/x/*")
	d.TeamMaxRequests = ptr(5)
	if _, err := admin.PutDefinition(t.Context(), d, client.WriteOptions{}); err != nil {
		t.Errorf("a route with only team_max_requests: %v", err)
	}
}
