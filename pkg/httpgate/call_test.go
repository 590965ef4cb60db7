package httpgate_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Middleware with a resolver: the client address comes from the trusted
// proxies' header only; a spoofed X-Forwarded-For from an untrusted peer
// changes nothing (every call is the peer's), from a trusted one it is
// the client.
func TestMiddlewareClientIP(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		trusted string
		allowed int // of 4 calls, each with another X-Forwarded-For
	}{
		{"untrusted peer", "10.0.0.0/8", 2},
		{"trusted peer", "127.0.0.0/8", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := memEnforcer(t, []ratelimit.Definition{callerGroup("anon", 60, ptr(2))},
				ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "0.0.0.0/0", Groups: []string{"anon"}})
			res, err := clientip.New([]netip.Prefix{netip.MustParsePrefix(c.trusted)}, "")
			if err != nil {
				t.Fatal(err)
			}
			classify := func(r *http.Request) (enforce.Call, bool) {
				return enforce.Call{TargetType: "mcp_server", TargetName: "srv"}, true
			}
			ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
			srv := httptest.NewServer(httpgate.Middleware(e, classify, httpgate.MiddlewareOptions{ClientIPs: res})(ok))
			t.Cleanup(srv.Close)
			allowed := 0
			for _, xff := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"} {
				req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
				req.Header.Set("X-Forwarded-For", xff)
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					allowed++
				} else if resp.StatusCode != http.StatusTooManyRequests {
					t.Errorf("X-Forwarded-For %s: %d", xff, resp.StatusCode)
				}
			}
			if allowed != c.allowed {
				t.Errorf("%d of 4 anonymous calls with changing X-Forwarded-For allowed, want %d", allowed, c.allowed)
			}
		})
	}
}

// The middleware gives the Call the request's method and path: a route
// tier limits requests classify recognizes with no target, through a real
// listener, and a path no route matches passes untouched.
func TestMiddlewareFeedsRoutes(t *testing.T) {
	t.Parallel()
	tier := route("high", 60, "/tokens/*")
	tier.Methods, tier.UserMaxRequests = []string{"POST"}, ptr(1)
	e := memEnforcer(t, []ratelimit.Definition{tier})
	classify := func(r *http.Request) (enforce.Call, bool) {
		return enforce.Call{Username: r.Header.Get("X-User")}, true
	}
	srv := httptest.NewServer(httpgate.Middleware(e, classify, httpgate.MiddlewareOptions{})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })))
	t.Cleanup(srv.Close)
	do := func(method, path string) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		req.Header.Set("X-User", "alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	for i, s := range []struct {
		method, path string
		status       int
	}{
		{"POST", "/tokens/new", http.StatusOK},
		{"POST", "/Tokens/other", http.StatusTooManyRequests},
		{"GET", "/tokens/new", http.StatusOK},
		{"POST", "/elsewhere", http.StatusOK},
	} {
		if got := do(s.method, s.path); got != s.status {
			t.Errorf("step %d %s %s: %d, want %d", i+1, s.method, s.path, got, s.status)
		}
	}
}
