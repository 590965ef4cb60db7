package api_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/escalation"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// escalationEnvs starts two rlapi replicas over one database with
// escalation lockouts (After violations within 5 min lock for lockout),
// alice in a group allowing her one call an hour, and bob an
// administrator.
func escalationEnvs(t *testing.T, lockout time.Duration) (a, b *apitest.Env, admin *client.Client) {
	t.Helper()
	o := apitest.Options{Escalation: &escalation.Policy{After: 5, Within: 5 * time.Minute, Lockout: lockout}}
	a = apitest.StartWith(t, api.Config{}, o)
	b = apitest.StartReplicaWith(t, a, api.Config{}, o)
	admin = clientFor(t, a, a.AdminToken)
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"hourly"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutAdmin(t.Context(), ratelimit.Admin{SubjectType: "user", Subject: "bob"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	define(t, a, admin, group("hourly", 3600, 1, 0), targetLimit("mcp_server", "vault", 3600, 1))
	refresh(t, b)
	return a, b, admin
}

// Seed 004's lockout scenario through POST /api/check, across two
// replicas: the 5th violation within 5 minutes locks alice out for 15
// minutes (Retry-After, X-Lockout-Remaining, in the decision too); the
// lockout is a quarantine with an expiry and a reason naming the
// definition and the count, audited and listed; the middleware answers it
// 429; an operator's removal ends it early; an administrator is never
// locked out.
func TestEscalationLockoutAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, b, admin := escalationEnvs(t, 15*time.Minute)
	gw := []*client.Client{clientFor(t, a, a.Token(t, "gw", ratelimit.RoleEnforcer)), clientFor(t, b, a.Token(t, "gw-b", ratelimit.RoleEnforcer))}
	hc := contractHTTPClient(t)
	alice := `{"username":"alice","target_type":"mcp_server","target_name":"mcpgw"}`
	check := func(i int) answer {
		t.Helper()
		env := []*apitest.Env{a, b}[i%2]
		return send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: env.AdminToken, body: alice})
	}
	if r := check(0).json(t); r["allowed"] != true {
		t.Fatalf("first call: %v", r)
	}
	// Four violations, alternating replicas: throttled, not locked.
	for i := 1; i <= 4; i++ {
		if r := check(i).json(t); r["reason"] != "throttled" {
			t.Fatalf("violation %d: %v, want throttled", i, r)
		}
	}
	ans := check(5)
	r := ans.json(t)
	if r["reason"] != "locked-out" || r["retry_after"] != float64(900) || r["lockout_remaining"] != float64(900) {
		t.Fatalf("5th violation: %v; want locked-out with retry_after and lockout_remaining 900", r)
	}
	if ans.header.Get("Retry-After") != "900" || ans.header.Get("X-Lockout-Remaining") != "900" {
		t.Errorf("5th violation headers: Retry-After %q, X-Lockout-Remaining %q; want 900, 900", ans.header.Get("Retry-After"), ans.header.Get("X-Lockout-Remaining"))
	}

	// The other replica learns it from the database (its notice, or a
	// refresh here rather than waiting for it).
	refresh(t, a)
	refresh(t, b)
	for i, c := range gw {
		res, err := c.Check(t.Context(), client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "other"})
		if err != nil || res.Reason != client.ReasonLockedOut || res.RetryAfter < 899 || res.LockoutRemaining < 899 {
			t.Errorf("replica %d after the lockout: %+v, %v; want locked-out for ~900s", i, res, err)
		}
	}
	q, err := admin.ListQuarantine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var entry *client.QuarantineEntry
	for i := range q.Callers {
		if q.Callers[i].ID == "user:alice" {
			entry = &q.Callers[i]
		}
	}
	if entry == nil || entry.ExpiresAt == nil || entry.QuarantinedAt == nil ||
		entry.ExpiresAt.Sub(*entry.QuarantinedAt) != 15*time.Minute ||
		!strings.Contains(entry.Reason, "5 violations of caller:group:hourly:3600") {
		t.Fatalf("quarantine list: %+v, want alice with a 15m expiry and a reason naming the definition and the count", entry)
	}
	audit, err := admin.ListAudit(t.Context(), client.AuditFilter{Actor: "rlctl-lockout"})
	if err != nil || len(audit.Entries) != 1 || audit.Entries[0].Action != "lockout" || audit.Entries[0].ResourceID != "user:alice" {
		t.Errorf("audit of the lockout: %+v, %v; want one lockout entry by rlctl-lockout", audit.Entries, err)
	}

	// Through the middleware on replica b: 429 with both headers.
	mw := httpgate.Middleware(b.Enforcer, func(*http.Request) (enforce.Call, bool) {
		return enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw"}, true
	}, httpgate.MiddlewareOptions{})(http.NotFoundHandler())
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, httptest.NewRequest("POST", "/mcpgw/mcp", nil))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("X-Lockout-Remaining") == "" || rec.Header().Get("Retry-After") == "" {
		t.Errorf("middleware: %d %v; want 429 with Retry-After and X-Lockout-Remaining", rec.Code, rec.Header())
	}

	// An operator removes it: alice is back to her (used-up) limit.
	if removed, _, err := admin.Unquarantine(t.Context(), "user", "alice", client.WriteOptions{}); err != nil || !removed {
		t.Fatalf("unquarantine: %v, %v", removed, err)
	}
	refresh(t, a)
	refresh(t, b)
	for i, c := range gw {
		res, err := c.Check(t.Context(), client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw"})
		if err != nil || res.Reason != client.ReasonThrottled {
			t.Errorf("replica %d after removal: %+v, %v; want throttled (the lockout ended early)", i, res, err)
		}
	}

	// bob, an administrator, is throttled by the target limit as often as
	// he likes and never locked out.
	for i := range 8 {
		res, err := gw[i%2].Check(t.Context(), client.CheckRequest{Username: "bob", TargetType: "mcp_server", TargetName: "vault"})
		if err != nil || res.Reason == client.ReasonLockedOut || (i > 0 && res.Reason != client.ReasonThrottled) {
			t.Fatalf("admin call %d: %+v, %v; want throttled, never locked out", i+1, res, err)
		}
	}
	if q, _ := admin.ListQuarantine(t.Context()); len(q.Callers) != 0 {
		t.Errorf("quarantine after the admin's violations: %+v", q.Callers)
	}
}

// The lockout ends on time: with a 2-second lockout, the answer says at
// most 2 seconds, the quarantine expires 2 seconds after it started, and
// once it has, alice is throttled again, not locked out.
func TestEscalationLockoutEndsOnTime(t *testing.T) {
	t.Parallel()
	a, _, admin := escalationEnvs(t, 2*time.Second)
	gw := clientFor(t, a, a.Token(t, "gw", ratelimit.RoleEnforcer))
	call := client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw"}
	var res client.CheckResult
	for range 6 {
		var err error
		if res, err = gw.Check(t.Context(), call); err != nil {
			t.Fatal(err)
		}
	}
	if res.Reason != client.ReasonLockedOut || res.RetryAfter != 2 || res.LockoutRemaining != 2 {
		t.Fatalf("5th violation: %+v, want locked-out for 2s", res)
	}
	q, err := admin.ListQuarantine(t.Context())
	if err != nil || len(q.Callers) != 1 || q.Callers[0].ExpiresAt.Sub(*q.Callers[0].QuarantinedAt) != 2*time.Second {
		t.Fatalf("quarantine: %+v, %v; want alice for 2s", q.Callers, err)
	}
	refresh(t, a)
	// Poll until it has ended; the deadline only bounds a hang.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		// At most what is left now, rounded up: the decision comes later.
		most := int64((time.Until(*q.Callers[0].ExpiresAt) + time.Second - 1) / time.Second)
		res, err := gw.Check(t.Context(), call)
		if err != nil {
			t.Fatal(err)
		}
		if res.Reason == client.ReasonThrottled {
			break
		}
		if res.Reason != client.ReasonLockedOut || time.Now().After(deadline) {
			t.Fatalf("while waiting for the end: %+v", res)
		}
		if res.LockoutRemaining > max(most, 1) {
			t.Fatalf("lockout_remaining %d past the expiry (at most %ds were left)", res.LockoutRemaining, most)
		}
	}
	if time.Now().Before(*q.Callers[0].ExpiresAt) {
		t.Error("the lockout ended before its expiry")
	}
}

// An anonymous caller keyed by its client IP is escalation-locked through
// POST /api/check, across two replicas: its 5th violation locks its
// network subject (the /64 of its IPv6 address) for 15 minutes, a
// quarantine with an expiry listed by `quarantine list`, audited; the
// other replica learns it from its change notice and answers a second
// address of the /64 locked-out, as the middleware does (429, both
// headers); an operator's removal ends it early, and the anonymous caller
// is limited again by its network's group.
func TestEscalationLockoutAnonymousAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, b, admin := escalationEnvs(t, 15*time.Minute)
	if _, err := admin.PutMembership(t.Context(), ratelimit.Membership{SubjectType: "network", Subject: "2001:db8::/32", Groups: []string{"hourly"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	refresh(t, a)
	refresh(t, b)
	hc := contractHTTPClient(t)
	check := func(i int, ip string) answer {
		t.Helper()
		env := []*apitest.Env{a, b}[i%2]
		return send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: env.AdminToken,
			body: `{"client_ip":"` + ip + `","target_type":"mcp_server","target_name":"mcpgw"}`})
	}
	if r := check(0, "2001:db8:7:8::1").json(t); r["allowed"] != true {
		t.Fatalf("first call: %v", r)
	}
	for i := 1; i <= 4; i++ {
		if r := check(i, "2001:db8:7:8::1").json(t); r["reason"] != "throttled" {
			t.Fatalf("violation %d: %v, want throttled", i, r)
		}
	}
	ans := check(5, "2001:db8:7:8::1")
	if r := ans.json(t); r["reason"] != "locked-out" || r["retry_after"] != float64(900) || r["lockout_remaining"] != float64(900) ||
		ans.header.Get("Retry-After") != "900" || ans.header.Get("X-Lockout-Remaining") != "900" {
		t.Fatalf("5th violation: %v %v; want locked-out for 900s with Retry-After and X-Lockout-Remaining", r, ans.header)
	}

	// Replica b wrote it (the 5th call): both learn it from their change
	// notices (partial reloads), without a refresh here. Waiting with Peek
	// consumes nothing: a throttled Check before a replica knows would be
	// one more violation.
	gw := []*client.Client{clientFor(t, a, a.Token(t, "gw", ratelimit.RoleEnforcer)), clientFor(t, b, a.Token(t, "gw-b", ratelimit.RoleEnforcer))}
	for i, env := range []*apitest.Env{a, b} {
		peek := enforce.Call{ClientIP: "2001:db8:7:8::2", TargetType: "mcp_server", TargetName: "other"}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			d, err := env.Enforcer.Peek(t.Context(), peek)
			if err != nil {
				t.Fatal(err)
			}
			if d.Reason == enforce.ReasonLockedOut {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d never heard of the lockout: %+v", i, d)
			}
		}
	}
	second := client.CheckRequest{ClientIP: "2001:db8:7:8::2", TargetType: "mcp_server", TargetName: "other"}
	for i, c := range gw {
		res, err := c.Check(t.Context(), second)
		if err != nil || res.Reason != client.ReasonLockedOut || res.LockoutRemaining < 890 {
			t.Fatalf("replica %d, a second address of the /64: %+v, %v; want locked-out", i, res, err)
		}
	}
	// A user calling from the address is its own caller.
	if res, err := gw[0].Check(t.Context(), client.CheckRequest{Username: "carol", ClientIP: "2001:db8:7:8::1", TargetType: "mcp_server", TargetName: "mcpgw"}); err != nil || !res.Allowed {
		t.Errorf("a user from the locked address: %+v, %v; want allowed", res, err)
	}

	q, err := admin.ListQuarantine(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var entry *client.QuarantineEntry
	for i := range q.Callers {
		if q.Callers[i].ID == "network:2001:db8:7:8::/64" {
			entry = &q.Callers[i]
		}
	}
	if entry == nil || entry.ExpiresAt == nil || entry.QuarantinedAt == nil || entry.ExpiresAt.Sub(*entry.QuarantinedAt) != 15*time.Minute ||
		!strings.HasPrefix(entry.Reason, enforce.LockoutReasonPrefix+"5 violations of caller:group:hourly:3600") {
		t.Fatalf("quarantine list: %+v, want network 2001:db8:7:8::/64 for 15m with a lockout reason", q.Callers)
	}
	audit, err := admin.ListAudit(t.Context(), client.AuditFilter{Actor: "rlctl-lockout"})
	if err != nil || len(audit.Entries) != 1 || audit.Entries[0].Action != "lockout" || audit.Entries[0].ResourceID != "network:2001:db8:7:8::/64" {
		t.Errorf("audit of the lockout: %+v, %v; want one lockout entry by rlctl-lockout", audit.Entries, err)
	}

	// The middleware on replica a, for an anonymous request from the /64.
	mw := httpgate.Middleware(a.Enforcer, func(r *http.Request) (enforce.Call, bool) {
		return enforce.Call{ClientIP: "2001:db8:7:8::3", TargetType: "mcp_server", TargetName: "mcpgw"}, true
	}, httpgate.MiddlewareOptions{})(http.NotFoundHandler())
	rec := httptest.NewRecorder()
	mw.ServeHTTP(rec, httptest.NewRequest("POST", "/mcpgw/mcp", nil))
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("X-Lockout-Remaining") == "" || rec.Header().Get("Retry-After") == "" {
		t.Errorf("middleware: %d %v; want 429 with Retry-After and X-Lockout-Remaining", rec.Code, rec.Header())
	}

	// An operator removes it: the caller is throttled by its network's
	// (used-up) hourly limit again, on both replicas.
	if removed, _, err := admin.Unquarantine(t.Context(), "network", "2001:db8:7:8::/64", client.WriteOptions{}); err != nil || !removed {
		t.Fatalf("unquarantine: %v, %v", removed, err)
	}
	refresh(t, a)
	refresh(t, b)
	for i, c := range gw {
		res, err := c.Check(t.Context(), client.CheckRequest{ClientIP: "2001:db8:7:8::1", TargetType: "mcp_server", TargetName: "mcpgw"})
		if err != nil || res.Reason != client.ReasonThrottled {
			t.Errorf("replica %d after removal: %+v, %v; want throttled by the network's group", i, res, err)
		}
	}
}

// The lockout ends on time on every replica: locked through replica a
// for 5 seconds, both a and b answer locked-out, never past the expiry,
// and throttled once it has passed.
func TestEscalationLockoutEndsOnTimeOnBothReplicas(t *testing.T) {
	t.Parallel()
	a, b, admin := escalationEnvs(t, 5*time.Second)
	gw := []*client.Client{clientFor(t, a, a.Token(t, "gw", ratelimit.RoleEnforcer)), clientFor(t, b, a.Token(t, "gw-b", ratelimit.RoleEnforcer))}
	call := client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "mcpgw"}
	var res client.CheckResult
	for range 6 {
		var err error
		if res, err = gw[0].Check(t.Context(), call); err != nil {
			t.Fatal(err)
		}
	}
	if res.Reason != client.ReasonLockedOut {
		t.Fatalf("5th violation: %+v, want locked-out", res)
	}
	q, err := admin.ListQuarantine(t.Context())
	if err != nil || len(q.Callers) != 1 || q.Callers[0].ExpiresAt == nil {
		t.Fatalf("quarantine: %+v, %v", q.Callers, err)
	}
	expires := *q.Callers[0].ExpiresAt
	// Both replicas read it now rather than waiting for their notices.
	refresh(t, a)
	refresh(t, b)
	var locked, ended [2]bool
	// The deadline only bounds a hang.
	for deadline := time.Now().Add(30 * time.Second); !ended[0] || !ended[1]; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still locked out: ended %v", ended)
		}
		for i, c := range gw {
			if ended[i] {
				continue
			}
			res, err := c.Check(t.Context(), call)
			if err != nil {
				t.Fatal(err)
			}
			switch res.Reason {
			case client.ReasonLockedOut:
				locked[i] = true
				if !time.Now().Before(expires.Add(time.Second)) {
					t.Fatalf("replica %d: locked out past the expiry %v", i, expires)
				}
			case client.ReasonThrottled:
				ended[i] = true
				if time.Now().Before(expires) {
					t.Errorf("replica %d: the lockout ended before its expiry", i)
				}
			default:
				t.Fatalf("replica %d: %+v", i, res)
			}
		}
	}
	if !locked[0] || !locked[1] {
		t.Errorf("locked-out answers seen: %v, want on both replicas", locked)
	}
}
