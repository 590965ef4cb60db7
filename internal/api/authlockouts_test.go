package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// An administrator lists and lifts lockouts over the API, and the lift
// holds on every replica at once: two replicas both refusing a locked
// address (a valid token from it included) serve it again as soon as the
// lift's notice arrives, long before the 300 s lockout would have ended.
// rlapi's own lockout (scope rlapi) and a gateway's (scope gateway) alike;
// dry runs lift nothing, the lift is audited with its actor, a viewer may
// list but not lift, nothing to lift is a 404 and a bad address a 400
// naming the field. Everything through the real listener, checked
// against docs/openapi.yaml.
func TestAuthLockoutLiftReachesEveryReplica(t *testing.T) {
	t.Parallel()
	// The test's own loopback is a trusted proxy (never charged, never
	// locked): the locked clients are the X-Forwarded-For addresses.
	cfg := api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8")}
	a := apitest.Start(t, cfg)
	b := apitest.StartReplica(t, a, cfg)
	ctx := t.Context()
	adminA, adminB := clientFor(t, a, a.AdminToken), clientFor(t, b, a.AdminToken)
	viewer := clientFor(t, b, a.Token(t, "looker", ratelimit.RoleViewer))
	gw := clientFor(t, a, a.Token(t, "gateway", ratelimit.RoleEnforcer))
	hc := contractHTTPClient(t)

	const ip, gwIP = "203.0.113.7", "198.51.100.9"
	from := map[string]string{"X-Forwarded-For": ip}
	get := func(env *apitest.Env) int {
		t.Helper()
		return send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limits", token: a.AdminToken, header: from}).status
	}
	for i := range 5 {
		send(t, hc, a.URL, call{method: "GET", path: "/api/rate-limits", token: fmt.Sprintf("rlt_typo%d", i), header: from})
	}
	for i := range 5 {
		if _, err := gw.ReportAuth(ctx, client.AuthEvent{ClientIP: gwIP, Outcome: client.AuthFailure}); err != nil {
			t.Fatalf("gateway failure %d: %v", i+1, err)
		}
	}
	// Both replicas refuse both addresses, and cache it.
	for _, env := range []*apitest.Env{a, b} {
		if s := get(env); s != http.StatusTooManyRequests {
			t.Fatalf("a valid token from the locked address: %d, want 429", s)
		}
		st, err := clientFor(t, env, a.AdminToken).AuthLockout(ctx, gwIP)
		if err != nil || !st.Locked {
			t.Fatalf("gateway address: %+v, %v; want locked", st, err)
		}
	}

	list, err := viewer.ListAuthLockouts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rlapi": ip, "gateway": gwIP}
	if len(list.Lockouts) != 2 {
		t.Fatalf("list: %+v, want the two lockouts", list)
	}
	for _, l := range list.Lockouts {
		if want[l.Scope] != l.Address || !l.Locked || l.RemainingSeconds < 290 || l.RemainingSeconds > 300 {
			t.Errorf("listed %+v, want %s locked for about 300s in scope %s", l, want[l.Scope], l.Scope)
		}
	}

	// A viewer may not lift; a dry run lifts nothing.
	if _, _, err := viewer.LiftAuthLockout(ctx, ip, client.LiftOptions{}); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("viewer lift: %v, want forbidden", err)
	}
	before, rep, err := adminB.LiftAuthLockout(ctx, ip, client.LiftOptions{DryRun: true})
	if err != nil || rep == nil || rep.Action != "lift" || len(before) != 1 || before[0].Scope != "rlapi" {
		t.Fatalf("dry run: %+v, %+v, %v; want the rlapi lockout reported", before, rep, err)
	}
	if s := get(b); s != http.StatusTooManyRequests {
		t.Fatalf("after a dry run: %d, want still 429", s)
	}

	lifted, _, err := adminA.LiftAuthLockout(ctx, ip, client.LiftOptions{})
	if err != nil || len(lifted) != 1 || lifted[0].Address != ip || !lifted[0].Locked {
		t.Fatalf("lift: %+v, %v", lifted, err)
	}
	// b learned the lockout and would trust it until it ends: only the
	// notice can make it serve the address again. Polled, without a
	// token (no failure, no success), until it does; the deadline only
	// bounds a hang.
	waitFor(t, "replica b to serve the lifted address", func() bool {
		return send(t, hc, b.URL, call{method: "GET", path: "/api/rate-limits", header: from}).status == http.StatusUnauthorized
	})
	for _, env := range []*apitest.Env{a, b} {
		if s := get(env); s != http.StatusOK {
			t.Errorf("after the lift: %d, want 200", s)
		}
	}
	if _, _, err := adminA.LiftAuthLockout(ctx, ip, client.LiftOptions{}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("second lift: %v, want not found", err)
	}

	// The gateway's lockout, scope gateway, lifted on b: a forgets too.
	if _, _, err := adminB.LiftAuthLockout(ctx, gwIP, client.LiftOptions{Scope: client.AuthScopeGateway}); err != nil {
		t.Fatalf("lift the gateway lockout: %v", err)
	}
	waitFor(t, "replica a to forget the gateway lockout", func() bool {
		st, err := adminA.AuthLockout(ctx, gwIP)
		return err == nil && !st.Locked
	})

	page, err := adminA.ListAudit(ctx, client.AuditFilter{Resource: "auth-lockout"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range page.Entries {
		if e.Action != "lift" || e.Actor != "test-admin" {
			t.Errorf("audit entry %+v, want action lift by test-admin", e)
		}
		ids = append(ids, e.ResourceID)
	}
	if strings.Join(ids, ",") != gwIP+","+ip {
		t.Errorf("audited lifts %v, want %s then %s (newest first), the dry run not among them", ids, gwIP, ip)
	}
	if list, err := adminA.ListAuthLockouts(ctx); err != nil || len(list.Lockouts) != 0 {
		t.Errorf("list after the lifts: %+v, %v; want empty", list, err)
	}

	for _, c := range []struct{ name, path, field string }{
		{"not an address", "/api/auth-lockouts/nope", "address"},
		{"IPv4 with a prefix", "/api/auth-lockouts/203.0.113.0%2F24", "address"},
		{"unknown scope", "/api/auth-lockouts/" + ip + "?scope=ssh", "scope"},
	} {
		ans := send(t, hc, a.URL, call{method: "DELETE", path: c.path, token: a.AdminToken})
		if ans.status != http.StatusBadRequest || !strings.Contains(string(ans.body), `"field":"`+c.field+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", c.name, ans.status, ans.body, c.field)
		}
	}
}

// waitFor polls cond until it holds; the deadline only bounds a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
	}
}
