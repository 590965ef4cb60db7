package httpgate_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rlctl/rlctl/internal/enforcefixture"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/degrade"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// gateway is a gateway in miniature: Middleware in front of a backend that
// counts the calls it serves, on a real listener. Data-plane calls are
// POST /mcp/<server> by the user named in X-User; everything else passes.
type gateway struct {
	url       string
	reached   atomic.Int64
	mu        sync.Mutex
	decisions []enforce.Decision
	log       bytes.Buffer
}

func newGateway(t *testing.T, f *fixture) *gateway {
	t.Helper()
	g := &gateway{}
	classify := func(r *http.Request) (enforce.Call, bool) {
		server, ok := strings.CutPrefix(r.URL.Path, "/mcp/")
		if !ok {
			return enforce.Call{}, false
		}
		return enforce.Call{Username: r.Header.Get("X-User"), TargetType: "mcp_server", TargetName: server}, true
	}
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.reached.Add(1)
		_, _ = io.WriteString(w, "ok")
	})
	mw := httpgate.Middleware(f.E, classify, httpgate.MiddlewareOptions{
		OnDecision: func(_ *http.Request, _ enforce.Call, d enforce.Decision, _ error) {
			g.mu.Lock()
			g.decisions = append(g.decisions, d)
			g.mu.Unlock()
		},
		ErrorLog: slog.New(slog.NewTextHandler(&syncWriter{w: &g.log, mu: &g.mu}, nil)),
	})
	srv := httptest.NewServer(mw(backend))
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

type gwAnswer struct {
	status int
	header http.Header
	body   string
}

func (g *gateway) call(t *testing.T, path, user string) gwAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.url+path, strings.NewReader(`{"jsonrpc":"2.0","method":"tools/list","id":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return gwAnswer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func problemType(t *testing.T, a gwAnswer) string {
	t.Helper()
	if ct := a.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("content type %q, want application/problem+json", ct)
	}
	var p struct {
		Type   string `json:"type"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal([]byte(a.body), &p); err != nil {
		t.Fatalf("body is not a problem document: %v: %s", err, a.body)
	}
	if p.Status != a.status || p.Detail == "" {
		t.Errorf("problem %+v does not match status %d", p, a.status)
	}
	return strings.TrimPrefix(p.Type, "https://rlctl.dev/problems/")
}

var rateHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"}

func TestMiddlewareAllowsThenThrottles(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 60, 2))
	g := newGateway(t, f)

	for i, wantRemaining := range []string{"1", "0"} {
		a := g.call(t, "/mcp/s", "alice")
		if a.status != http.StatusOK || a.body != "ok" {
			t.Fatalf("call %d: %d %q, want the backend's 200", i+1, a.status, a.body)
		}
		if a.header.Get("X-RateLimit-Limit") != "2" || a.header.Get("X-RateLimit-Remaining") != wantRemaining ||
			a.header.Get("RateLimit-Policy") != `"target:mcp_server:s:60";q=2;w=60` || a.header.Get("Retry-After") != "" {
			t.Errorf("call %d: allowed response headers %v", i+1, a.header)
		}
	}
	a := g.call(t, "/mcp/s", "alice")
	if a.status != http.StatusTooManyRequests {
		t.Fatalf("third call: %d %s, want 429", a.status, a.body)
	}
	if kind := problemType(t, a); kind != "throttled" {
		t.Errorf("problem type %q, want throttled", kind)
	}
	if a.header.Get("Retry-After") != "60" || a.header.Get("X-RateLimit-Limit") != "2" || a.header.Get("X-RateLimit-Remaining") != "0" ||
		a.header.Get("RateLimit") != `"target:mcp_server:s:60";r=0;t=60` {
		t.Errorf("429 headers: %v", a.header)
	}
	if n := g.reached.Load(); n != 2 {
		t.Errorf("backend reached %d times, want 2 (the throttled call must not reach it)", n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.decisions) != 3 || !g.decisions[0].Allowed || g.decisions[2].Reason != enforce.ReasonThrottled {
		t.Errorf("OnDecision saw %+v", g.decisions)
	}
}

func TestMiddlewareQuarantineIsAPlain403(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 60, 100))
	f.Member("user", "mallory", "quarantine-callers")
	g := newGateway(t, f)

	a := g.call(t, "/mcp/s", "mallory")
	if a.status != http.StatusForbidden {
		t.Fatalf("quarantined caller: %d %s, want 403", a.status, a.body)
	}
	if kind := problemType(t, a); kind != "quarantined" {
		t.Errorf("problem type %q, want quarantined", kind)
	}
	for _, h := range append(rateHeaders, "Retry-After") {
		if v := a.header.Get(h); v != "" {
			t.Errorf("quarantine 403 carries %s: %q", h, v)
		}
	}
	// Not a data-plane call: passes untouched, even for a quarantined caller.
	if a := g.call(t, "/healthz", "mallory"); a.status != http.StatusOK || a.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("non-data-plane request: %d, headers %v", a.status, a.header)
	}
	if n := g.reached.Load(); n != 1 {
		t.Errorf("backend reached %d times, want 1 (only the non-data-plane request)", n)
	}
	if a := g.call(t, "/mcp/s", "alice"); a.status != http.StatusOK {
		t.Errorf("another caller: %d", a.status)
	}
}

func TestMiddlewareFailClosedIs503(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	closed := target("mcp_server", "s", 60, 100)
	closed.FailClosed = true
	f.Def(closed, target("mcp_server", "open", 60, 100))
	g := newGateway(t, f)
	repair := breakCounters(t, f)

	a := g.call(t, "/mcp/s", "alice")
	if a.status != http.StatusServiceUnavailable {
		t.Fatalf("fail-closed: %d %s, want 503", a.status, a.body)
	}
	if kind := problemType(t, a); kind != "rate-limit-unavailable" {
		t.Errorf("problem type %q", kind)
	}
	if a.header.Get("Retry-After") != "1" || a.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("503 headers: %v", a.header)
	}
	// A fail-open definition lets the call through, without rate headers.
	if a := g.call(t, "/mcp/open", "alice"); a.status != http.StatusOK || a.header.Get("X-RateLimit-Limit") != "" {
		t.Errorf("fail-open: %d, headers %v", a.status, a.header)
	}
	if n := g.reached.Load(); n != 1 {
		t.Errorf("backend reached %d times, want 1", n)
	}
	g.mu.Lock()
	logged := g.log.String()
	g.mu.Unlock()
	if strings.Count(logged, "fell back to the fail policy") != 2 || !strings.Contains(logged, "reason=fail-closed") {
		t.Errorf("ErrorLog got:\n%s", logged)
	}
	repair()
	if a := g.call(t, "/mcp/s", "alice"); a.status != http.StatusOK || a.header.Get("X-RateLimit-Limit") != "100" {
		t.Errorf("after repair: %d, headers %v", a.status, a.header)
	}
}

// TestMiddlewareDegraded: with the fail policy degrade and the counters
// broken, the middleware passes a call admitted on this replica's share
// (2 of 4, for 2 replicas) with X-RateLimit-Degraded: 1 beside the rate
// headers of that share, and refuses the next one 429, marked the same.
func TestMiddlewareDegraded(t *testing.T) {
	t.Parallel()
	f := enforcefixture.Start(t)
	fb, err := degrade.New(degrade.Options{Counters: postgres.NewCounterStore(f.Store.Pool()), Replicas: func() int { return 2 },
		Now: f.Clock.Now, ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fb.Close)
	f.Enforce(enforce.Options{FailPolicy: ratelimit.FailPolicyDegrade, Fallback: fb})
	f.Def(target("mcp_server", "s", 60, 4))
	g := newGateway(t, f)
	if a := g.call(t, "/mcp/s", "alice"); a.status != http.StatusOK || a.header.Get(httpgate.HeaderDegraded) != "" {
		t.Fatalf("with the counters working: %d, %s %q", a.status, httpgate.HeaderDegraded, a.header.Get(httpgate.HeaderDegraded))
	}
	breakCounters(t, f)
	for i := range 2 {
		a := g.call(t, "/mcp/s", "alice")
		if a.status != http.StatusOK || a.header.Get(httpgate.HeaderDegraded) != "1" || a.header.Get("X-RateLimit-Limit") != "2" {
			t.Errorf("call %d, counters broken: %d, %s %q, limit %q; want 200, degraded, on the share 2",
				i+1, a.status, httpgate.HeaderDegraded, a.header.Get(httpgate.HeaderDegraded), a.header.Get("X-RateLimit-Limit"))
		}
	}
	if a := g.call(t, "/mcp/s", "alice"); a.status != http.StatusTooManyRequests || a.header.Get(httpgate.HeaderDegraded) != "1" {
		t.Errorf("past the share: %d, %s %q; want 429, degraded", a.status, httpgate.HeaderDegraded, a.header.Get(httpgate.HeaderDegraded))
	}
}
