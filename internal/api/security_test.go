package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
)

func TestAuthentication(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{AuthMaxFailures: -1})
	viewer := env.Token(t, "viewer", "viewer")
	enforcer := env.Token(t, "gateway", "enforcer")
	expiring := env.Token(t, "old", "admin")
	revoked := env.Token(t, "gone", "admin")
	if _, err := env.Store.Pool().Exec(t.Context(), `update rl_api_tokens set expires_at = now() - interval '1 minute' where name = 'old'`); err != nil {
		t.Fatal(err)
	}
	if a := do(t, env.URL, call{method: "DELETE", path: "/api/tokens/gone", token: env.AdminToken}); a.status != 200 {
		t.Fatalf("revoke: %d %s", a.status, a.body)
	}
	def := `{"axis":"target","entity_type":"mcp_server","name":"s","window_seconds":60,"max_requests":5}`
	cases := []struct {
		name   string
		c      call
		status int
		detail string
	}{
		{"public healthz", call{method: "GET", path: "/healthz"}, 200, ""},
		{"public readyz", call{method: "GET", path: "/readyz"}, 200, ""},
		{"public version", call{method: "GET", path: "/api/version"}, 200, ""},
		{"no token", call{method: "GET", path: "/api/rate-limits"}, 401, "missing bearer token"},
		{"unknown token", call{method: "GET", path: "/api/rate-limits", token: "rlt_nope"}, 401, "invalid token"},
		{"expired token", call{method: "GET", path: "/api/rate-limits", token: expiring}, 401, "expired"},
		{"revoked token", call{method: "GET", path: "/api/rate-limits", token: revoked}, 401, "revoked"},
		{"metrics need a token", call{method: "GET", path: "/metrics"}, 401, ""},
		{"viewer reads", call{method: "GET", path: "/api/rate-limits", token: viewer}, 200, ""},
		{"viewer reads metrics", call{method: "GET", path: "/metrics", token: viewer}, 200, ""},
		{"viewer may not write", call{method: "PUT", path: "/api/rate-limits/target:mcp_server:s:60", token: viewer, body: def}, 403, "role viewer"},
		{"viewer may not list tokens", call{method: "GET", path: "/api/tokens", token: viewer}, 403, ""},
		{"enforcer may not read definitions", call{method: "GET", path: "/api/rate-limits", token: enforcer}, 403, "role enforcer"},
		{"enforcer may not write", call{method: "PUT", path: "/api/rate-limits/target:mcp_server:s:60", token: enforcer, body: def}, 403, ""},
		{"admin writes", call{method: "PUT", path: "/api/rate-limits/target:mcp_server:s:60", token: env.AdminToken, body: def}, 201, ""},
	}
	for _, c := range cases {
		a := do(t, env.URL, c.c)
		if a.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, a.status, c.status, a.body)
			continue
		}
		if c.status >= 400 {
			if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("%s: content type %q, want application/problem+json", c.name, ct)
			}
			if c.detail != "" && !strings.Contains(a.json(t)["detail"].(string), c.detail) {
				t.Errorf("%s: detail %q, want it to mention %q", c.name, a.json(t)["detail"], c.detail)
			}
		}
		if c.status == 401 && a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", c.name)
		}
	}
}

func TestFailedAuthenticationLocksOutTheAddress(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{AuthMaxFailures: 3, AuthWindow: time.Minute, AuthLockout: 5 * time.Minute})
	for i := range 3 {
		if a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: fmt.Sprintf("rlt_wrong%d", i)}); a.status != 401 {
			t.Fatalf("failure %d: status %d, want 401", i+1, a.status)
		}
	}
	// Locked out now, even with a good token: the lockout is per address.
	a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: env.AdminToken})
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("after 3 failures: status %d, want 429: %s", a.status, a.body)
	}
	if ra := a.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("429 without a usable Retry-After (%q)", ra)
	}
	// Public routes stay reachable.
	if a := do(t, env.URL, call{method: "GET", path: "/healthz"}); a.status != 200 {
		t.Errorf("healthz while locked out: %d", a.status)
	}
}

func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	t.Parallel()
	// The test client connects from 127.0.0.1. Untrusted, its
	// X-Forwarded-For is ignored: failures from "different" forwarded
	// addresses all count against 127.0.0.1.
	env := apitest.Start(t, api.Config{AuthMaxFailures: 2})
	for i := range 2 {
		do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: "rlt_x", header: map[string]string{"X-Forwarded-For": fmt.Sprintf("203.0.113.%d", i)}})
	}
	if a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: env.AdminToken}); a.status != 429 {
		t.Errorf("untrusted peer spoofing X-Forwarded-For escaped the lockout: status %d", a.status)
	}

	// Trusted, the forwarded address is the client: one client's failures
	// do not lock out another behind the same proxy.
	trusted := apitest.Start(t, api.Config{AuthMaxFailures: 2, TrustedProxies: mustPrefixes("127.0.0.0/8")})
	for range 2 {
		do(t, trusted.URL, call{method: "GET", path: "/api/rate-limits", token: "rlt_x", header: map[string]string{"X-Forwarded-For": "203.0.113.7"}})
	}
	if a := do(t, trusted.URL, call{method: "GET", path: "/api/rate-limits", token: trusted.AdminToken, header: map[string]string{"X-Forwarded-For": "203.0.113.7"}}); a.status != 429 {
		t.Errorf("locked-out forwarded client: status %d, want 429", a.status)
	}
	if a := do(t, trusted.URL, call{method: "GET", path: "/api/rate-limits", token: trusted.AdminToken, header: map[string]string{"X-Forwarded-For": "203.0.113.8"}}); a.status != 200 {
		t.Errorf("other forwarded client: status %d, want 200", a.status)
	}
}

func TestBadBodies(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	path := "/api/rate-limits/caller:group:g:60"
	cases := []struct {
		name, body string
		status     int
		field      string
		detail     string
	}{
		{"malformed", `{"axis":`, 400, "", "malformed JSON"},
		{"not an object", `[1,2]`, 400, "", "JSON object"},
		{"unknown field", `{"axis":"caller","entity_type":"group","name":"g","window_seconds":60,"user_max_request":30}`, 400, "user_max_request", "unknown field"},
		{"wrong type", `{"axis":"caller","entity_type":"group","name":"g","window_seconds":"60","user_max_requests":30}`, 400, "window_seconds", "must be a whole number of seconds, not string"},
		{"two values", `{"axis":"caller"} {"axis":"caller"}`, 400, "", "more than one"},
		{"empty", ``, 400, "", "empty"},
		{"too large", `{"description":"` + strings.Repeat("x", 2<<20) + `"}`, 413, "", "exceeds"},
		{"floor", `{"axis":"caller","entity_type":"group","name":"g","window_seconds":60,"user_max_requests":3}`, 400, "user_max_requests",
			"user_max_requests 3 is below the user floor of 20/min for windows <= 60s"},
		{"id mismatch", `{"axis":"caller","entity_type":"group","name":"h","window_seconds":60,"user_max_requests":30}`, 400, "id", `"caller:group:g:60"`},
	}
	for _, c := range cases {
		a := do(t, env.URL, call{method: "PUT", path: path, token: env.AdminToken, body: c.body})
		if a.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, a.status, c.status, a.body)
			continue
		}
		p := a.json(t)
		if !strings.Contains(p["detail"].(string), c.detail) {
			t.Errorf("%s: detail %q, want it to contain %q", c.name, p["detail"], c.detail)
		}
		if c.field != "" {
			errs, _ := p["errors"].([]any)
			found := false
			for _, e := range errs {
				if e.(map[string]any)["field"] == c.field {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: errors %v do not name field %q", c.name, p["errors"], c.field)
			}
		}
	}
	// Nothing of the above was stored.
	if a := do(t, env.URL, call{method: "GET", path: path, token: env.AdminToken}); a.status != 404 {
		t.Errorf("after refused writes: GET status %d, want 404", a.status)
	}
	if a := do(t, env.URL, call{method: "GET", path: "/api/audit", token: env.AdminToken}); !strings.Contains(string(a.body), `"entries":[]`) {
		t.Errorf("refused writes left audit rows: %s", a.body)
	}
}

// X-Forwarded-For hops with a port are the client's address with the port
// dropped, never a reason to charge the trusted proxy: before, such a hop
// locked the proxy's own address out, and everyone behind it with it.
func TestForwardedForWithPortsNeverChargesTheProxy(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{AuthMaxFailures: 2, TrustedProxies: mustPrefixes("127.0.0.0/8")})
	get := func(token, xff string) answer {
		c := call{method: "GET", path: "/api/rate-limits", token: token}
		if xff != "" {
			c.header = map[string]string{"X-Forwarded-For": xff}
		}
		return do(t, env.URL, c)
	}
	for _, hop := range []string{"10.0.0.77:1234", "10.0.0.77:5678"} {
		if a := get("rlt_wrong", hop); a.status != 401 {
			t.Fatalf("wrong token via %s: %d, want 401", hop, a.status)
		}
	}
	if a := get(env.AdminToken, "10.0.0.77"); a.status != 429 {
		t.Errorf("10.0.0.77 after two failures sent as 10.0.0.77:<port>: %d, want 429", a.status)
	}
	for _, c := range []struct{ name, xff string }{
		{"another client", "10.0.0.78"},
		{"another client with a port", "10.0.0.79:4321"},
		{"the proxy itself", ""},
	} {
		if a := get(env.AdminToken, c.xff); a.status != 200 {
			t.Errorf("%s: %d, want 200: %s", c.name, a.status, a.body)
		}
	}
	for _, hop := range []string{"[2001:db8::1]:443", "2001:db8::2"} {
		get("rlt_wrong", hop)
	}
	if a := get(env.AdminToken, "2001:db8::99"); a.status != 429 {
		t.Errorf("an IPv6 /64 after two failures: %d, want 429", a.status)
	}
	// Failures that resolve to the trusted proxy itself (no usable hop)
	// are refused but never lock the proxy out.
	for range 3 {
		get("rlt_wrong", "")
	}
	if a := get(env.AdminToken, "10.0.0.80"); a.status != 200 {
		t.Errorf("client behind a proxy whose own address failed: %d, want 200", a.status)
	}
	// Two lockouts: 10.0.0.77 and 2001:db8::/64.
	m := do(t, env.URL, call{method: "GET", path: "/metrics", token: env.AdminToken})
	if !strings.Contains(string(m.body), "\nrlapi_auth_lockouts_total 2\n") {
		t.Errorf("/metrics does not count two lockouts:\n%s", linesContaining(string(m.body), "rlapi_auth"))
	}
}

func linesContaining(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Only unknown tokens are guesses: expired and revoked ones, however often
// sent, never lock an address out.
func TestExpiredAndRevokedTokensAreNoGuesses(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{AuthMaxFailures: 2})
	expiring := env.Token(t, "old", "admin")
	revoked := env.Token(t, "gone", "admin")
	if _, err := env.Store.Pool().Exec(t.Context(), `update rl_api_tokens set expires_at = now() - interval '1 minute' where name = 'old'`); err != nil {
		t.Fatal(err)
	}
	if a := do(t, env.URL, call{method: "DELETE", path: "/api/tokens/gone", token: env.AdminToken}); a.status != 200 {
		t.Fatalf("revoke: %d %s", a.status, a.body)
	}
	for range 3 {
		for _, tok := range []string{expiring, revoked} {
			if a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: tok}); a.status != 401 {
				t.Fatalf("expired/revoked token: %d, want 401", a.status)
			}
		}
	}
	if a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: env.AdminToken}); a.status != 200 {
		t.Errorf("after expired and revoked tokens: %d, want 200: %s", a.status, a.body)
	}
}
