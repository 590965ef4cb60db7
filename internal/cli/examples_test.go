package cli_test

// The apply files of docs/examples/, each applied with rlctl to
// a real rlapi and driven through POST /api/check, httpgate.Middleware and
// GET /api/validate, all three deciding on the one enforcer and database:
// what the reference design says should happen is what is asserted.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/httpgate"
)

const exampleSecret = "example-gateway-secret-0123456789"

// exampleGateway is one rlapi and the three ways a call reaches its
// enforcer.
type exampleGateway struct {
	t     *testing.T
	r     *clitest.Rlctl
	gw    *client.Client
	mw    *httptest.Server // httpgate.Middleware in front of a 200 handler
	httpc *http.Client
}

func newExampleGateway(t *testing.T, file string) *exampleGateway {
	t.Helper()
	t.Parallel()
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	r := clitest.New(t)
	r.Env = apitest.Start(t, api.Config{TrustedProxies: loopback, GatewaySecret: exampleSecret})
	r.Token = r.Env.AdminToken
	if out := r.Must("apply", "-f", "../../docs/examples/"+file); !strings.Contains(out, "created") {
		t.Fatalf("rlctl apply -f %s:\n%s", file, out)
	}
	if err := r.Env.Enforcer.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	gw, err := client.New(r.Env.URL, client.Options{Token: r.Env.Token(t, "gateway", "enforcer")})
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := clientip.New(loopback, "")
	if err != nil {
		t.Fatal(err)
	}
	classify := func(req *http.Request) (enforce.Call, bool) {
		return enforce.Call{Username: req.Header.Get("X-User"), ClientID: req.Header.Get("X-Client"),
			TargetType: "mcp_server", TargetName: "srv"}, true
	}
	mw := httptest.NewServer(httpgate.Middleware(r.Env.Enforcer, classify, httpgate.MiddlewareOptions{ClientIPs: resolver})(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })))
	t.Cleanup(mw.Close)
	return &exampleGateway{t: t, r: r, gw: gw, mw: mw, httpc: &http.Client{Timeout: 30 * time.Second}}
}

// check decides through POST /api/check.
func (g *exampleGateway) check(user, clientID, ip string) client.CheckResult {
	g.t.Helper()
	res, err := g.gw.Check(g.t.Context(), client.CheckRequest{Username: user, ClientID: clientID, ClientIP: ip,
		TargetType: "mcp_server", TargetName: "srv"})
	if err != nil {
		g.t.Fatal(err)
	}
	return res
}

// get sends a request through a proxy at 127.0.0.1 that forwards for ip.
func (g *exampleGateway) get(url, ip string, header map[string]string) *http.Response {
	g.t.Helper()
	req, err := http.NewRequestWithContext(g.t.Context(), http.MethodGet, url, nil)
	if err != nil {
		g.t.Fatal(err)
	}
	if ip != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := g.httpc.Do(req)
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// middleware decides through httpgate.Middleware: the HTTP status.
func (g *exampleGateway) middleware(user, ip string) int {
	g.t.Helper()
	return g.get(g.mw.URL+"/srv/mcp", ip, map[string]string{"X-User": user}).StatusCode
}

// validate decides through GET /api/validate as nginx's auth_request asks:
// the status and whether it is a throttle.
func (g *exampleGateway) validate(user, ip string) (int, bool) {
	g.t.Helper()
	resp := g.get(g.r.Env.URL+"/api/validate", ip, map[string]string{"X-Gateway-Secret": exampleSecret,
		"X-Original-URI": "/srv/mcp", "X-Auth-Username": user})
	return resp.StatusCode, resp.Header.Get("X-RateLimit-Throttled") == "1"
}

// counted is the counts of the counters rlctl lists for a caller.
func (g *exampleGateway) counted(caller string) string {
	g.t.Helper()
	out := g.r.Must("counters", "get", "--caller", caller, "-o", "json")
	var list struct {
		Counters []struct {
			Count int64 `json:"count"`
		} `json:"counters"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		var bare []struct {
			Count int64 `json:"count"`
		}
		if err := json.Unmarshal([]byte(out), &bare); err != nil {
			g.t.Fatalf("counters get -o json: %v\n%s", err, out)
		}
		list.Counters = bare
	}
	var counts []string
	for _, c := range list.Counters {
		counts = append(counts, fmt.Sprint(c.Count))
	}
	return strings.Join(counts, " ")
}

// awayFromMinuteEdge waits out the last seconds of a minute, so calls
// counted within one fixed window do not see it turn.
func awayFromMinuteEdge(t *testing.T) {
	t.Helper()
	if left := 60 - time.Now().Unix()%60; left <= 15 {
		time.Sleep(time.Duration(left)*time.Second + 100*time.Millisecond)
	}
}

func deniedBy(r client.CheckResult) []string {
	var ids []string
	for _, g := range r.Gates {
		if g.Remaining == 0 && !r.Allowed {
			ids = append(ids, g.DefinitionID)
		}
	}
	return ids
}

// Seed 002: 60 calls a minute per source IP, whoever makes them and
// through whichever door; the 61st is refused by the per-IP definition,
// and another address is not affected.
func TestExampleSeed002PerIP(t *testing.T) {
	g := newExampleGateway(t, "seed-002-per-ip.yaml")
	const ip = "198.51.100.20"
	awayFromMinuteEdge(t)
	allowed := 0
	for i := range 20 {
		// A user, an agent and anonymous calls, all from ip.
		user, agent := []string{"alice", "", ""}[i%3], []string{"", "bot", ""}[i%3]
		if g.check(user, agent, ip).Allowed {
			allowed++
		}
		if g.middleware("bob", ip) == http.StatusOK {
			allowed++
		}
		if status, _ := g.validate("carol", ip); status == http.StatusOK {
			allowed++
		}
	}
	if allowed != 60 {
		t.Fatalf("60 calls from %s: %d allowed", ip, allowed)
	}
	if r := g.check("dave", "", ip); r.Allowed || r.Reason != client.ReasonThrottled || fmt.Sprint(deniedBy(r)) != "[caller:group:per-ip:60]" {
		t.Errorf("the 61st call through /api/check: %+v, want throttled by caller:group:per-ip:60", r)
	}
	if status := g.middleware("erin", ip); status != http.StatusTooManyRequests {
		t.Errorf("the 61st call through the middleware: %d, want 429", status)
	}
	if status, throttled := g.validate("frank", ip); status != http.StatusForbidden || !throttled {
		t.Errorf("the 61st call through /api/validate: %d (throttled %v), want 403 marked throttled (nginx answers 429)", status, throttled)
	}
	if status := g.middleware("erin", "198.51.100.21"); status != http.StatusOK {
		t.Errorf("a call from another address: %d, want 200", status)
	}
	if got := g.counted("ip:" + ip); got != "60" {
		t.Errorf("the per-IP bucket of %s counts %q, want 60", ip, got)
	}
}

// Seed 001: anonymous callers are keyed by their client IP, IPv6 by its
// /64 and IPv4-mapped addresses unmapped: two addresses of one /64 share
// a bucket, the next /64 does not, and a user calling from the same
// address keeps her own bucket.
func TestExampleSeed001AnonymousByIP(t *testing.T) {
	g := newExampleGateway(t, "seed-001-anonymous-by-ip.yaml")
	awayFromMinuteEdge(t)
	allowed := 0
	for range 15 {
		if g.check("", "", "2001:db8:a:b::1").Allowed {
			allowed++
		}
		if g.middleware("", "2001:db8:a:b:ffff:ffff:ffff:fffe") == http.StatusOK {
			allowed++
		}
	}
	if allowed != 30 {
		t.Fatalf("30 anonymous calls from one /64: %d allowed", allowed)
	}
	if status, throttled := g.validate("", "2001:db8:a:b::77"); status != http.StatusForbidden || !throttled {
		t.Errorf("a third address of the spent /64 through /api/validate: %d (throttled %v), want a throttle", status, throttled)
	}
	if r := g.check("", "", "2001:db8:a:b::2"); r.Allowed || fmt.Sprint(deniedBy(r)) != "[caller:group:principal:60]" {
		t.Errorf("another address of the spent /64: %+v, want throttled by caller:group:principal:60", r)
	}
	if r := g.check("", "", "2001:db8:a:c::1"); !r.Allowed {
		t.Errorf("the next /64: %+v, want allowed", r)
	}
	if r := g.check("alice", "", "2001:db8:a:b::1"); !r.Allowed {
		t.Errorf("alice from the spent /64: %+v, want allowed (her own bucket)", r)
	}
	if got := g.counted("ip:2001:db8:a:b::/64"); got != "30" {
		t.Errorf("the /64's bucket counts %q, want 30", got)
	}
	if got := g.counted("user:alice"); got != "1" {
		t.Errorf("alice's bucket counts %q, want 1", got)
	}
	// An IPv4 address and its IPv4-mapped IPv6 form are one caller.
	for range 29 {
		if !g.check("", "", "203.0.113.9").Allowed {
			t.Fatal("an anonymous IPv4 caller was refused within its limit")
		}
	}
	if status := g.middleware("", "::ffff:203.0.113.9"); status != http.StatusOK {
		t.Errorf("the 30th call, from the mapped form: %d, want 200", status)
	}
	if r := g.check("", "", "::ffff:203.0.113.9"); r.Allowed {
		t.Errorf("the 31st call, from the mapped form: %+v, want throttled", r)
	}
	// Without an address an anonymous call has no one to limit.
	if r := g.check("", "", ""); !r.Allowed || len(r.Gates) != 0 {
		t.Errorf("an anonymous call without an address: %+v, want allowed with no gates", r)
	}
}
