package api_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Reference 002's scenario through POST /api/auth-events, /api/check's
// companion: 5 failures in 60 s lock the address for 300 s (a second
// address of the same IPv6 /64 too), POST /api/check and GET
// /api/auth-lockout answer it with Retry-After; a success resets, an
// expired token does not count. Everything through the real listener,
// checked against docs/openapi.yaml.
func TestAuthEventsSeed002Scenario(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	gw := clientFor(t, env, env.Token(t, "gateway", ratelimit.RoleEnforcer))
	ctx := t.Context()
	report := func(ip, outcome string) client.AuthStatus {
		t.Helper()
		st, err := gw.ReportAuth(ctx, client.AuthEvent{ClientIP: ip, Identity: "alice", Outcome: outcome})
		if err != nil {
			t.Fatalf("report %s from %s: %v", outcome, ip, err)
		}
		return st
	}

	const ip = "2001:db8:7:8::1"
	for i := range 4 {
		if st := report(ip, client.AuthFailure); st.Locked {
			t.Fatalf("locked after %d failures: %+v", i+1, st)
		}
	}
	st := report(ip, client.AuthFailure)
	if !st.Locked || !st.Started || st.RetryAfter < 299 || st.RetryAfter > 300 || st.Address != "2001:db8:7:8::/64" {
		t.Fatalf("5th failure: %+v, want locked for 300s, started, address 2001:db8:7:8::/64", st)
	}

	// A second address of the /64: locked, before any credential.
	other, err := gw.AuthLockout(ctx, "2001:db8:7:8:ffff::2")
	if err != nil || !other.Locked || other.RetryAfter < 299 {
		t.Fatalf("GET /api/auth-lockout for the same /64: %+v, %v; want locked", other, err)
	}
	res, err := gw.Check(ctx, client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw", ClientIP: "2001:db8:7:8:ffff::2"})
	if err != nil || res.Allowed || res.Reason != client.ReasonAuthLocked || res.RetryAfter < 299 {
		t.Fatalf("POST /api/check from the /64: %+v, %v; want auth-locked with retry_after ~300", res, err)
	}
	a := send(t, contractHTTPClient(t), env.URL, call{method: "GET", path: "/api/auth-lockout?client_ip=2001:db8:7:8::9", token: env.AdminToken})
	if a.status != 200 || a.header.Get("Retry-After") == "" {
		t.Errorf("GET /api/auth-lockout: %d, Retry-After %q; want 200 with Retry-After", a.status, a.header.Get("Retry-After"))
	}
	if other, _ := gw.AuthLockout(ctx, "2001:db8:7:9::1"); other.Locked {
		t.Error("the next /64 is locked too")
	}

	// A success resets; expired tokens do not count.
	const v4 = "192.0.2.44"
	for range 4 {
		report(v4, client.AuthFailure)
	}
	report(v4, client.AuthSuccess)
	for range 4 {
		report(v4, client.AuthFailure)
	}
	for range 10 {
		report(v4, client.AuthExpired)
	}
	if st := report(v4, client.AuthExpired); st.Locked {
		t.Fatal("4 failures after a success, and expired tokens, locked the address")
	}
	if st := report(v4, client.AuthFailure); !st.Locked {
		t.Fatal("the 5th failure since the success did not lock")
	}
}

// Bad input to the new endpoints is a 400 naming the field, and nothing
// is counted.
func TestAuthEventsBadInput(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	hc := contractHTTPClient(t)
	for _, c := range []struct {
		name, method, path, body, field string
	}{
		{"no client_ip", "POST", "/api/auth-events", `{"outcome":"failure"}`, "client_ip"},
		{"bad client_ip", "POST", "/api/auth-events", `{"client_ip":"300.1.1.1","outcome":"failure"}`, "client_ip"},
		{"no outcome", "POST", "/api/auth-events", `{"client_ip":"192.0.2.1"}`, "outcome"},
		{"unknown outcome", "POST", "/api/auth-events", `{"client_ip":"192.0.2.1","outcome":"maybe"}`, "outcome"},
		{"identity too long", "POST", "/api/auth-events", `{"client_ip":"192.0.2.1","outcome":"failure","identity":"` + strings.Repeat("x", 257) + `"}`, "identity"},
		{"outcome not a string", "POST", "/api/auth-events", `{"client_ip":"192.0.2.1","outcome":3}`, "outcome"},
		{"unknown field", "POST", "/api/auth-events", `{"client_ip":"192.0.2.1","outcome":"failure","count":9}`, ""},
		{"lockout without client_ip", "GET", "/api/auth-lockout", "", "client_ip"},
		{"lockout bad client_ip", "GET", "/api/auth-lockout?client_ip=nope", "", "client_ip"},
		{"lockout unknown parameter", "GET", "/api/auth-lockout?client_ip=192.0.2.1&ip=x", "", "ip"},
	} {
		for range 5 { // five bad failures would lock if any counted
			a := send(t, hc, env.URL, call{method: c.method, path: c.path, token: env.AdminToken, body: c.body})
			if a.status != http.StatusBadRequest {
				t.Fatalf("%s: status %d, want 400: %s", c.name, a.status, a.body)
			}
			if c.field != "" && !strings.Contains(string(a.body), `"field":"`+c.field+`"`) {
				t.Errorf("%s: the problem does not name %s: %s", c.name, c.field, a.body)
			}
		}
	}
	admin := clientFor(t, env, env.AdminToken)
	if st, err := admin.AuthLockout(t.Context(), "192.0.2.1"); err != nil || st.Locked {
		t.Errorf("after refused reports: %+v, %v; want not locked", st, err)
	}
}

// rlapi's own lockout is shared by its replicas: failures split between
// two replicas lock the address on both; a success on either resets it;
// an expired token counts on neither.
func TestAuthLockoutSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	cfg := api.Config{AuthMaxFailures: 4, TrustedProxies: mustPrefixes("127.0.0.0/8")}
	a := apitest.Start(t, cfg)
	b := apitest.StartReplica(t, a, cfg)
	expired := a.Token(t, "expired", ratelimit.RoleViewer)
	if _, err := a.Store.Pool().Exec(t.Context(), `update rl_api_tokens set expires_at = now() - interval '1 minute' where name = 'expired'`); err != nil {
		t.Fatal(err)
	}
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	get := func(env *apitest.Env, token, ip string) int {
		t.Helper()
		return do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: token, header: from(ip)}).status
	}
	const ip = "203.0.113.70"
	for i := range 3 {
		if s := get([]*apitest.Env{a, b}[i%2], fmt.Sprintf("rlt_wrong%d", i), ip); s != 401 {
			t.Fatalf("failure %d: %d, want 401", i+1, s)
		}
	}
	// A success on b forgets the three.
	if s := get(b, a.AdminToken, ip); s != 200 {
		t.Fatalf("good token: %d", s)
	}
	for i := range 3 {
		get([]*apitest.Env{a, b}[i%2], "rlt_wrong", ip)
	}
	for range 5 {
		if s := get(a, expired, ip); s != 401 {
			t.Fatalf("expired token: %d, want 401", s)
		}
	}
	if s := get(b, a.AdminToken, ip); s != 200 {
		t.Fatalf("3 failures after a success, and 5 expired tokens, locked the address: %d", s)
	}
	for i := range 4 {
		get([]*apitest.Env{a, b}[i%2], "rlt_wrong", ip)
	}
	// Four failures, two on each replica: both refuse it, a valid token
	// included, with Retry-After. A replica trusts its last "not locked"
	// for up to a second (RecheckAfter), so the one that did not take the
	// lockout is polled (without a token: a missing token is no failure
	// and no success) until it refuses; the deadline only bounds a hang.
	for _, env := range []*apitest.Env{a, b} {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if s := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", header: from(ip)}).status; s == http.StatusTooManyRequests {
				break
			} else if s != http.StatusUnauthorized || time.Now().After(deadline) {
				t.Fatalf("after 4 failures split across replicas: %d, want 429 on both", s)
			}
		}
		ans := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: a.AdminToken, header: from(ip)})
		if ans.status != http.StatusTooManyRequests {
			t.Fatalf("after 4 failures split across replicas: %d, want 429 on both", ans.status)
		}
		if ra, err := strconv.Atoi(ans.header.Get("Retry-After")); err != nil || ra < 1 || ra > 300 {
			t.Errorf("Retry-After %q, want 1..300", ans.header.Get("Retry-After"))
		}
	}
	if s := get(a, a.AdminToken, "203.0.113.71"); s != 200 {
		t.Errorf("another address: %d, want 200", s)
	}
}
