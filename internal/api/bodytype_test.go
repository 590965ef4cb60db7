package api_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

// TestFractionalSecondsAreRefusedInWords: a duration in seconds with a
// fraction is refused saying it must be a whole number of seconds, and
// showing the number sent (encoding/json calls it "number 1.5", which
// once read "must be a number, not number 1.5").
func TestFractionalSecondsAreRefusedInWords(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	for _, c := range []call{
		{method: "POST", path: "/api/rate-limit-quarantine/user:alice", body: `{"reason":"x","expires_in_seconds":1.5}`},
		{method: "POST", path: "/api/tokens", body: `{"name":"ci","role":"viewer","expires_in_seconds":1.5}`},
		{method: "POST", path: "/api/apply", body: `{"definitions":[{"axis":"caller","entity_type":"group","name":"g","window_seconds":1.5,"user_max_requests":100}]}`},
	} {
		c.token = env.AdminToken
		a := do(t, env.URL, c)
		detail, _ := a.json(t)["detail"].(string)
		if a.status != 400 || !strings.Contains(detail, "must be a whole number of seconds, not 1.5") {
			t.Errorf("%s %s: %d %q, want 400 saying a whole number of seconds, not 1.5", c.method, c.path, a.status, detail)
		}
	}
	if n := auditCount(t, env); n != 0 {
		t.Errorf("%d audit rows after refused writes", n)
	}
}
