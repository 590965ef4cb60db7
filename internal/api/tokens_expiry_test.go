package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

// expires_in_seconds is 1 to ten years, or absent for no expiry: 0 used to
// mean "never" although the message said >= 1, and 2^63-1 overflowed into a
// token that had expired before it was created.
func TestTokenExpiryIsBounded(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	cases := []struct {
		expires string // the JSON value, or "" to leave the field out
		status  int
	}{
		{"", 201},
		{"null", 201},
		{"1", 201},
		{"3600", 201},
		{fmt.Sprint(api.MaxTokenLifetimeSeconds), 201},
		{"0", 400},
		{"-1", 400},
		{fmt.Sprint(api.MaxTokenLifetimeSeconds + 1), 400},
		{"9223372036854775807", 400},
		{"9223372036854775808", 400},
		{"1e30", 400},
		{"1.5", 400},
	}
	for i, c := range cases {
		body := fmt.Sprintf(`{"name":"t%d","role":"viewer"}`, i)
		if c.expires != "" {
			body = fmt.Sprintf(`{"name":"t%d","role":"viewer","expires_in_seconds":%s}`, i, c.expires)
		}
		a := do(t, env.URL, call{method: "POST", path: "/api/tokens", token: env.AdminToken, body: body})
		if a.status != c.status {
			t.Errorf("expires_in_seconds %q: status %d, want %d: %s", c.expires, a.status, c.status, a.body)
			continue
		}
		m := a.json(t)
		if c.status == 400 {
			errs, _ := m["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["field"] != "expires_in_seconds" {
				t.Errorf("expires_in_seconds %q: errors %v, want one naming expires_in_seconds", c.expires, m["errors"])
			}
			continue
		}
		// What was created must work: an expiring token is not yet expired.
		secret := m["token"].(string)
		if a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: secret}); a.status != 200 {
			t.Errorf("expires_in_seconds %q: the new token is refused: %d %s", c.expires, a.status, a.body)
		}
		exp, has := m["expires_at"].(string)
		switch {
		case c.expires == "" || c.expires == "null":
			if has {
				t.Errorf("expires_in_seconds %q: expires_at %q, want none", c.expires, exp)
			}
		default:
			at, err := time.Parse(time.RFC3339, exp)
			if err != nil || !at.After(time.Now()) {
				t.Errorf("expires_in_seconds %q: expires_at %q, want a time in the future", c.expires, exp)
			}
		}
	}
}
