package api_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// boundedClient bounds each call only so a hang fails the test instead of
// stalling it; no assertion is about time.
func boundedClient() *http.Client { return &http.Client{Timeout: 10 * time.Second} }

// boundedContractClient is boundedClient checking every answer against
// docs/openapi.yaml.
func boundedContractClient(t *testing.T) *http.Client {
	c := contractHTTPClient(t)
	c.Timeout = 10 * time.Second
	return c
}

// A revoked token is refused by the next call on the replica that revoked
// it and, through NOTIFY, on every other replica: the cache TTL here is an
// hour, so only the notification can make the second replica refuse.
func TestRevokedTokenIsRefusedOnEveryReplica(t *testing.T) {
	t.Parallel()
	cfg := api.Config{TokenCacheTTL: time.Hour}
	one := apitest.Start(t, cfg)
	two := apitest.StartReplica(t, one, cfg)
	gw := one.Token(t, "gateway", "enforcer")
	hc := boundedClient()
	check := func(env *apitest.Env) answer {
		return send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: gw, body: `{"username":"alice"}`})
	}
	for _, env := range []*apitest.Env{one, two} {
		if a := check(env); a.status != 200 {
			t.Fatalf("before revocation: %d %s", a.status, a.body)
		}
	}
	if a := do(t, one.URL, call{method: "DELETE", path: "/api/tokens/gateway", token: one.AdminToken}); a.status != 200 {
		t.Fatalf("revoke: %d %s", a.status, a.body)
	}
	if a := check(one); a.status != 401 || !strings.Contains(string(a.body), "revoked") {
		t.Errorf("the revoking replica's next call: %d %s, want 401 revoked", a.status, a.body)
	}
	// The notification travels asynchronously: wait for it, bounded.
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := check(two)
		if a.status == 401 {
			if !strings.Contains(string(a.body), "revoked") {
				t.Errorf("other replica: %s, want it to say revoked", a.body)
			}
			break
		}
		if a.status != 200 || time.Now().After(deadline) {
			t.Fatalf("other replica still answers %d %s after the revocation", a.status, a.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With rl_api_tokens locked, a token verified in the last seconds keeps
// deciding (a used-up target stays throttled) and a token never seen gets a
// prompt 503 with Retry-After, not a hang.
func TestCachedTokenDecidesWhileTokenTableIsLocked(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{TokenCacheTTL: time.Hour, BackendTimeout: 250 * time.Millisecond})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	cold := env.Token(t, "cold", "enforcer")
	awayFromWindowEdge(t, 60)
	define(t, env, admin, targetLimit("mcp_server", "srv", 60, 2))
	hc := boundedContractClient(t)
	body := `{"username":"alice","target_type":"mcp_server","target_name":"srv"}`
	check := func(token string) answer {
		return send(t, hc, env.URL, call{method: "POST", path: "/api/check", token: token, body: body})
	}
	if r := decodeCheck(t, check(gw)); !r.Allowed {
		t.Fatalf("first call: %+v", r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tx, err := env.Store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `lock table rl_api_tokens in access exclusive mode`); err != nil {
		t.Fatal(err)
	}

	if r := decodeCheck(t, check(gw)); !r.Allowed || r.Remaining != 0 {
		t.Errorf("second call under the lock: %+v, want allowed with 0 remaining", r)
	}
	if r := decodeCheck(t, check(gw)); r.Allowed || r.Reason != "throttled" {
		t.Errorf("third call under the lock: %+v, want throttled", r)
	}
	a := check(cold)
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") == "" ||
		!strings.Contains(string(a.body), "token-unverifiable") || !strings.Contains(string(a.body), "did not answer within 250ms") {
		t.Errorf("uncached token under the lock: %d %v %s, want 503 token-unverifiable with Retry-After", a.status, a.header, a.body)
	}
	// Management routes answer too, from the cache.
	if a := do(t, env.URL, call{method: "GET", path: "/api/rate-limits", token: env.AdminToken}); a.status != 200 {
		t.Errorf("admin list under the lock: %d %s", a.status, a.body)
	}
}

// A token that is not cached while the database refuses connections gets a
// 503 that says so (not "did not answer in time") with Retry-After, within
// the backend deadline.
func TestUncachedTokenWithTheDatabaseDown(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	gw := env.Token(t, "gateway", "enforcer")
	// A pool whose every connection is refused: nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()
	pool, err := pgxpool.New(t.Context(), "postgres://rlctl@"+deadAddr+"/rlctl?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	srv := api.New(env.Store, api.Config{}, api.Opts{Enforcer: env.Enforcer, AuthStore: store.New(pool), Counters: postgres.NewCounterStore(pool)})
	hln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, hln) }()
	t.Cleanup(func() { cancel(); <-done })

	a := send(t, boundedContractClient(t), "http://"+hln.Addr().String(), call{method: "POST", path: "/api/check", token: gw, body: `{"username":"alice"}`})
	if a.status != http.StatusServiceUnavailable || a.header.Get("Retry-After") != "1" ||
		!strings.Contains(string(a.body), "token-unverifiable") || !strings.Contains(string(a.body), "cannot be reached") {
		t.Errorf("uncached token, database refusing connections: %d %v %s", a.status, a.header, a.body)
	}
}
