package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/rlctl/rlctl/pkg/client"
)

// An unknown subject type is a 400 naming subject_type whose message lists
// every type the endpoint accepts, team and network included, on every
// endpoint taking one (memberships, quarantine, apply); nothing is stored.
func TestUnknownSubjectTypeListsEveryType(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	const rule = `: must be one of user, client, server, agent, network, team (got "group")`
	for _, c := range []struct {
		call  call
		field string
	}{
		{call{method: "PUT", path: "/api/rate-limit-memberships/group:developers", body: `{"subject_type":"group","subject":"developers","groups":["x"]}`}, "subject_type"},
		{call{method: "PUT", path: "/api/rate-limit-memberships/user:alice", body: `{"subject_type":"group","subject":"alice","groups":["x"]}`}, "subject_type"},
		{call{method: "POST", path: "/api/rate-limit-quarantine/group:developers", body: `{"reason":"x"}`}, "subject_type"},
		{call{method: "DELETE", path: "/api/rate-limit-quarantine/group:developers"}, "subject_type"},
		{call{method: "POST", path: "/api/apply", body: `{"memberships":[{"subject_type":"group","subject":"developers","groups":["x"]}]}`}, "memberships[0].subject_type"},
	} {
		c.call.token = env.AdminToken
		a := send(t, hc, env.URL, c.call)
		var p struct {
			Errors []struct{ Field, Message string } `json:"errors"`
		}
		_ = json.Unmarshal(a.body, &p)
		if a.status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Field != c.field || p.Errors[0].Message != c.field+rule {
			t.Errorf("%s %s: %d %s, want 400 naming %s with %q", c.call.method, c.call.path, a.status, a.body, c.field, c.field+rule)
		}
	}
	page, err := admin.ListMemberships(t.Context(), client.MembershipFilter{})
	if err != nil || len(page.Memberships) != 0 {
		t.Errorf("memberships after the refusals: %+v %v, want none", page, err)
	}
}
