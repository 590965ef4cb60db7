package api_test

import (
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/pgtest"
)

// A NUL or invalid UTF-8 in a path id or a query filter is the client's
// mistake: 400 naming the field, and no ERROR in the log. It used to reach
// PostgreSQL (SQLSTATE 22021) and answer 500.
func TestBadBytesInIDsAndFiltersAre400(t *testing.T) {
	t.Parallel()
	st := pgtest.NewStore(t)
	var logs lockedBuffer
	srv := api.New(st, api.Config{AuthMaxFailures: -1}, api.Opts{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	env := startInProcess(t, st)
	def := `{"axis":"caller","entity_type":"group","name":"g","window_seconds":60,"user_max_requests":30}`
	cases := []struct {
		method, path, body, field string
	}{
		{"GET", "/api/rate-limits/caller:group:%FF%FE:60", "", "id"},
		{"GET", "/api/rate-limits/caller:group:%00:60", "", "id"},
		{"PUT", "/api/rate-limits/caller:group:%FF:60", def, "id"},
		{"DELETE", "/api/rate-limits/caller:group:%00:60", "", "id"},
		{"POST", "/api/rate-limits-enabled/caller:group:%C0%80:60", `{"enabled":false}`, "id"},
		{"GET", "/api/rate-limit-memberships/user:%00", "", "id"},
		{"PUT", "/api/rate-limit-memberships/user:%FF", `{"subject_type":"user","subject":"x","groups":["g"]}`, "id"},
		{"DELETE", "/api/rate-limit-memberships/client:a%00b", "", "id"},
		{"POST", "/api/rate-limit-quarantine/user:%FF", "", "id"},
		{"DELETE", "/api/rate-limit-quarantine/user:%00", "", "id"},
		{"PUT", "/api/rate-limit-admins/%FF", `{}`, "id"},
		{"DELETE", "/api/rate-limit-admins/%00", "", "id"},
		{"DELETE", "/api/tokens/%00", "", "name"},
		{"DELETE", "/api/tokens/bad%FFname", "", "name"},
		{"GET", "/api/rate-limits?name=%00", "", "name"},
		{"GET", "/api/rate-limits?axis=caller&entity_type=%FF", "", "entity_type"},
		{"GET", "/api/rate-limit-memberships?group=%00", "", "group"},
		{"GET", "/api/rate-limit-memberships?cursor=%FF", "", "cursor"},
		{"GET", "/api/rate-limits-status?username=%00", "", "username"},
		{"GET", "/api/rate-limits-status?client_id=%FF", "", "client_id"},
		{"GET", "/api/audit?actor=%00", "", "actor"},
		{"GET", "/api/audit?resource=%FF", "", "resource"},
		{"GET", "/api/rate-limit-counters?caller=user:%00", "", "caller"},
		{"DELETE", "/api/rate-limit-counters?definition=caller:group:%FF:60", "", "definition"},
		{"GET", "/api/rate-limits?%00=1", "", "query parameter name"},
	}
	for _, c := range cases {
		a := do(t, ts.URL, call{method: c.method, path: c.path, token: env.token, body: c.body})
		if a.status != 400 {
			t.Errorf("%s %s: status %d, want 400: %s", c.method, c.path, a.status, a.body)
			continue
		}
		if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s %s: content type %q", c.method, c.path, ct)
		}
		errs, _ := a.json(t)["errors"].([]any)
		if len(errs) == 0 || errs[0].(map[string]any)["field"] != c.field {
			t.Errorf("%s %s: errors %v, want the first to name %q", c.method, c.path, errs, c.field)
			continue
		}
		if msg := errs[0].(map[string]any)["message"].(string); !strings.Contains(msg, "UTF-8 text without NUL") {
			t.Errorf("%s %s: message %q does not say the rule", c.method, c.path, msg)
		}
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("bad bytes in ids and filters logged an ERROR:\n%s", logs.String())
	}
	// Ordinary text, unicode included, still reaches the handlers.
	for _, path := range []string{"/api/rate-limits?name=caf%C3%A9", "/api/rate-limit-memberships/user:caf%C3%A9"} {
		if a := do(t, ts.URL, call{method: "GET", path: path, token: env.token}); a.status != 200 && a.status != 404 {
			t.Errorf("GET %s: status %d: %s", path, a.status, a.body)
		}
	}
}
