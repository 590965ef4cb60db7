package api_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

// TestPutMembershipWithNoGroupsDeletesIt: "groups": [] is no membership,
// as in the reference and as rlctl member set --groups "": the PUT
// answers 200 and deletes the membership with one audit row; a second one
// finds nothing and writes none; a quarantined subject is refused.
func TestPutMembershipWithNoGroupsDeletesIt(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	hc := contractHTTPClient(t) // the answers are the documented ones
	admin := func(c call) answer {
		c.token = env.AdminToken
		return send(t, hc, env.URL, c)
	}
	if a := admin(call{method: "PUT", path: "/api/rate-limit-memberships/user:alice", body: `{"subject_type":"user","subject":"alice","groups":["devs"]}`}); a.status != 201 {
		t.Fatalf("create: %d %s", a.status, a.body)
	}
	empty := call{method: "PUT", path: "/api/rate-limit-memberships/user:alice", body: `{"subject_type":"user","subject":"alice","groups":[]}`}

	dry := empty
	dry.path += "?dry_run=true"
	if a := admin(dry); a.status != 200 || a.json(t)["action"] != "delete" {
		t.Errorf("dry run: %d %s, want 200 with action delete", a.status, a.body)
	}
	rows := auditCount(t, env)
	a := admin(empty)
	if a.status != 200 || a.json(t)["deleted"] != true {
		t.Fatalf(`PUT "groups": []: %d %s, want 200 {"deleted":true}`, a.status, a.body)
	}
	if g := admin(call{method: "GET", path: "/api/rate-limit-memberships/user:alice"}); g.status != 404 {
		t.Errorf("the membership is still there: %d %s", g.status, g.body)
	}
	if n := auditCount(t, env); n != rows+1 {
		t.Errorf("audit rows %d -> %d, want one more", rows, n)
	}
	audit := admin(call{method: "GET", path: "/api/audit?resource=membership/user:alice&limit=1"})
	if !strings.Contains(string(audit.body), `"action":"delete"`) {
		t.Errorf("the newest audit row of user:alice is not a delete: %s", audit.body)
	}

	if a := admin(empty); a.status != 200 || a.json(t)["deleted"] != false {
		t.Errorf(`PUT "groups": [] again: %d %s, want 200 {"deleted":false}`, a.status, a.body)
	}
	if n := auditCount(t, env); n != rows+1 {
		t.Errorf("a PUT that deleted nothing wrote an audit row (%d -> %d)", rows+1, n)
	}

	if a := admin(call{method: "POST", path: "/api/rate-limit-quarantine/user:bob", body: `{"reason":"x"}`}); a.status != 201 {
		t.Fatalf("quarantine: %d %s", a.status, a.body)
	}
	rows = auditCount(t, env)
	q := admin(call{method: "PUT", path: "/api/rate-limit-memberships/user:bob", body: `{"subject_type":"user","subject":"bob","groups":[]}`})
	if q.status != 409 || !strings.Contains(string(q.body), "quarantine") {
		t.Errorf(`PUT "groups": [] of a quarantined subject: %d %s, want 409`, q.status, q.body)
	}
	if n := auditCount(t, env); n != rows {
		t.Errorf("a refused PUT wrote an audit row")
	}
	// A body without groups is still refused.
	if a := admin(call{method: "PUT", path: "/api/rate-limit-memberships/user:carol", body: `{"subject_type":"user","subject":"carol"}`}); a.status != 400 {
		t.Errorf("PUT without groups: %d %s, want 400", a.status, a.body)
	}
}
