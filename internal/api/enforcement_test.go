package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestEnforcementSwitchAPI: GET and PUT /api/enforcement through the
// contract client: the default, admin-only writes, field errors, If-Match,
// dry runs, and no-op writes that leave no audit row.
func TestEnforcementSwitchAPI(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	hc := contractHTTPClient(t)
	viewer := env.Token(t, "viewer", "viewer")
	gw := env.Token(t, "gw", "enforcer")
	get := func(tok string) (answer, ratelimit.Enforcement) {
		a := send(t, hc, env.URL, call{method: "GET", path: "/api/enforcement", token: tok})
		var e ratelimit.Enforcement
		if a.status == http.StatusOK {
			if err := json.Unmarshal(a.body, &e); err != nil {
				t.Fatal(err)
			}
		}
		return a, e
	}
	put := func(tok, body string, header map[string]string) answer {
		return send(t, hc, env.URL, call{method: "PUT", path: "/api/enforcement", token: tok, body: body, header: header})
	}

	if a, e := get(viewer); a.status != 200 || !e.Enabled || e.Version != 0 || e.UpdatedAt != nil {
		t.Fatalf("default: %d %s", a.status, a.body)
	}
	if a, _ := get(gw); a.status != http.StatusForbidden {
		t.Errorf("enforcer GET: %d, want 403", a.status)
	}
	if a := put(viewer, `{"enabled":false}`, nil); a.status != http.StatusForbidden {
		t.Errorf("viewer PUT: %d, want 403", a.status)
	}
	for _, c := range []struct{ body, field string }{
		{`{}`, "enabled"},
		{`{"enabled":"no"}`, "enabled"},
		{`{"enabled":false,"reason":"` + strings.Repeat("x", 501) + `"}`, "reason"},
		{`{"enabled":false,"reason":"a\u0000b"}`, "reason"},
		{`{"enabled":false,"why":"x"}`, "why"},
	} {
		a := put(env.AdminToken, c.body, nil)
		if a.status != http.StatusBadRequest || !strings.Contains(string(a.body), `"field":"`+c.field+`"`) {
			t.Errorf("PUT %.40s: %d %s, want 400 naming %s", c.body, a.status, a.body, c.field)
		}
	}
	// A dry run changes nothing.
	if a := put(env.AdminToken, `{"enabled":false,"reason":"try"}`, nil); a.status != 200 {
		t.Fatalf("off: %d %s", a.status, a.body)
	}
	if a := put(env.AdminToken, `{"enabled":true}`, map[string]string{"If-Match": `"7"`}); a.status != http.StatusPreconditionFailed {
		t.Errorf("stale If-Match: %d %s, want 412", a.status, a.body)
	}
	a, e := get(viewer)
	if e.Enabled || e.Version != 1 || e.UpdatedBy != "test-admin" || e.Reason != "try" || a.header.Get("ETag") != `"1"` {
		t.Errorf("after off: %s %v", a.body, a.header)
	}
	if a := send(t, hc, env.URL, call{method: "PUT", path: "/api/enforcement?dry_run=true", token: env.AdminToken, body: `{"enabled":true}`}); a.status != 200 || !strings.Contains(string(a.body), `"dry_run":true`) {
		t.Errorf("dry run: %d %s", a.status, a.body)
	}
	if _, e := get(viewer); e.Enabled {
		t.Error("a dry run switched enforcement on")
	}
	if a := put(env.AdminToken, `{"enabled":false,"reason":"try"}`, map[string]string{"If-Match": `"1"`}); a.status != 200 {
		t.Errorf("same value: %d %s", a.status, a.body)
	}
	if a := put(env.AdminToken, `{"enabled":true,"reason":"done"}`, map[string]string{"If-Match": `"1"`}); a.status != 200 || !strings.Contains(string(a.body), `"version":2`) {
		t.Errorf("on: %d %s", a.status, a.body)
	}
	entries, err := env.Store.ListAudit(t.Context(), store.AuditFilter{Resource: "enforcement"})
	if err != nil || len(entries) != 2 || entries[0].Action != "enable" || entries[1].Action != "disable" {
		t.Errorf("audit: %+v %v, want enable and disable only", entries, err)
	}
}

// TestValidateWhileEnforcementIsOff: nginx's auth_request lets a used-up
// caller and a quarantined one through, without rate headers, while the
// master switch is off, and throttles again once it is back on.
func TestValidateWhileEnforcementIsOff(t *testing.T) {
	t.Parallel()
	env, admin := validateEnv(t)
	hc := contractHTTPClient(t)
	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "srv", 60, 1))
	if _, err := admin.Quarantine(t.Context(), "user", "mallory", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if a := validate(t, hc, env, "/srv/mcp"); a.status != 200 {
		t.Fatalf("first call: %d", a.status)
	}
	if a := validate(t, hc, env, "/srv/mcp"); a.status != http.StatusForbidden {
		t.Fatalf("second call: %d, want throttled", a.status)
	}
	setSwitch := func(on bool) {
		t.Helper()
		if _, _, err := admin.SetEnforcement(t.Context(), on, "test", client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		refresh(t, env)
	}
	setSwitch(false)
	for _, user := range []string{"alice", "mallory"} {
		a := validate(t, hc, env, "/srv/mcp", "X-Auth-Username", user)
		if a.status != 200 || a.header.Get("X-RateLimit-Limit") != "" || a.header.Get("Retry-After") != "" {
			t.Errorf("%s while off: %d %v, want 200 without rate headers", user, a.status, a.header)
		}
	}
	setSwitch(true)
	if a := validate(t, hc, env, "/srv/mcp"); a.status != http.StatusForbidden || a.header.Get("X-RateLimit-Throttled") != "1" {
		t.Errorf("after on: %d %v, want throttled", a.status, a.header)
	}
}
