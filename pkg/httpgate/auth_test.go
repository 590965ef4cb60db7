package httpgate_test

import (
	"context"
	"encoding/json"
	"github.com/rlctl/rlctl/internal/enforcefixture"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/httpgate"
)

// authEnforcer is an Enforcer over a memory store guarded by the default
// failed-credential throttle (5 failures in 60 s lock for 300 s), and the
// throttle.
func authEnforcer(t *testing.T) (*enforce.Enforcer, *auththrottle.Throttle) {
	t.Helper()
	clk := enforcefixture.NewClock(startOfDay)
	counters := memory.New()
	th, err := auththrottle.New(counters, auththrottle.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	e, err := enforce.New(context.Background(), enforce.Options{Counters: counters, Source: enforcetest.StaticSource(enforce.State{}),
		Now: clk.Now, SweepInterval: -1, CacheTTL: 72 * time.Hour, Guard: th})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, th
}

// lockOut reports five failed authentications from ip: the default
// throttle locks it for 300 s.
func lockOut(t *testing.T, th *auththrottle.Throttle, ip string) {
	t.Helper()
	for range 5 {
		if _, err := th.ReportAuth(context.Background(), auththrottle.Report{ClientIP: ip, Outcome: auththrottle.Failure}); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := th.Locked(context.Background(), ip); err != nil || !st.Locked {
		t.Fatalf("%s after five failures: %+v, %v; want locked", ip, st, err)
	}
}

// authAnswer is what AuthMiddleware answered one request, and whether the
// gateway's authentication behind it saw the request.
type authAnswer struct {
	status     int
	retryAfter string
	problem    string
	reached    bool
}

func throughAuth(t *testing.T, h func(http.Handler) http.Handler, peer, forwarded string) authAnswer {
	t.Helper()
	var a authAnswer
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.reached = true })
	r := httptest.NewRequest(http.MethodPost, "/srv/mcp", nil)
	r.RemoteAddr = peer + ":4711"
	if forwarded != "" {
		r.Header.Set("X-Forwarded-For", forwarded)
	}
	rec := httptest.NewRecorder()
	h(next).ServeHTTP(rec, r)
	a.status, a.retryAfter = rec.Code, rec.Header().Get("Retry-After")
	if rec.Code != http.StatusOK {
		var p struct {
			Type   string `json:"type"`
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("%d body is not a problem document: %v: %s", rec.Code, err, rec.Body)
		}
		a.problem = p.Type + ": " + p.Detail
	}
	return a
}

// AuthMiddleware refuses a locked-out address before the gateway's
// authentication sees the request, from the peer's address or (with a
// resolver) the trusted proxies' header; any other address, and every
// address while the gateway has no throttle, passes.
func TestAuthMiddleware(t *testing.T) {
	t.Parallel()
	const lockedIP, otherIP = "198.51.100.7", "198.51.100.8"
	_, e := authEnforcer(t)
	lockOut(t, e, lockedIP)
	trusted, err := clientip.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, "")
	if err != nil {
		t.Fatal(err)
	}
	refused := authAnswer{status: http.StatusTooManyRequests, retryAfter: "300",
		problem: "https://rlctl.dev/problems/too-many-auth-failures: too many failed authentications from this address; retry after 300s"}
	passed := authAnswer{status: http.StatusOK, reached: true}
	for _, c := range []struct {
		name            string
		e               *auththrottle.Throttle
		resolver        *clientip.Resolver
		peer, forwarded string
		want            authAnswer
	}{
		{"locked peer", e, nil, lockedIP, "", refused},
		{"another peer", e, nil, otherIP, "", passed},
		{"locked address named by a header no one trusts", e, nil, otherIP, lockedIP, passed},
		{"locked client behind a trusted proxy", e, trusted, "127.0.0.1", lockedIP, refused},
		{"another client behind a trusted proxy", e, trusted, "127.0.0.1", otherIP, passed},
		{"no throttle", nil, nil, lockedIP, "", passed},
	} {
		if got := throughAuth(t, httpgate.AuthMiddleware(c.e, c.resolver), c.peer, c.forwarded); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Middleware answers a call Check refuses for its address's failed
// authentications as AuthMiddleware does: 429, Retry-After, the same
// problem.
func TestMiddlewareAuthLocked(t *testing.T) {
	t.Parallel()
	const ip = "198.51.100.7"
	e, th := authEnforcer(t)
	lockOut(t, th, ip)
	mw := httpgate.Middleware(e, func(*http.Request) (enforce.Call, bool) {
		return enforce.Call{Username: "alice", TargetType: "mcp_server", TargetName: "srv"}, true
	}, httpgate.MiddlewareOptions{ClientIPs: &clientip.Resolver{}})
	got := throughAuth(t, mw, ip, "")
	want := authAnswer{status: http.StatusTooManyRequests, retryAfter: "300",
		problem: "https://rlctl.dev/problems/too-many-auth-failures: too many failed authentications from this address; retry after 300s"}
	if got != want {
		t.Errorf("Middleware from a locked address: %+v, want %+v", got, want)
	}
}
