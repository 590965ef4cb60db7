package auththrottle_test

import (
	"context"
	"github.com/rlctl/rlctl/internal/enforcefixture"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/httpgate"
)

// countingStore counts the round trips a counter store is asked for.
type countingStore struct {
	*memory.Store
	takes atomic.Int64
}

func (s *countingStore) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	s.takes.Add(1)
	return s.Store.Take(ctx, reqs, deadline)
}

// authEnforcer is an Enforcer over a memory store with the default
// throttle (5 failures in 60 s lock for 300 s) on clk, and the events it
// reported.
func authEnforcer(t *testing.T, clk *clock, counters enforce.CounterStore, o auththrottle.Options) (guarded, *authEvents) {
	t.Helper()
	ev := &authEvents{}
	o.OnEvent = ev.add
	o.Now = clk.Now
	// A deadline that only bounds a hang: the flood test runs 400,000
	// round trips on a busy machine under the race detector.
	o.BackendTimeout = time.Minute
	th, err := auththrottle.New(counters, o)
	if err != nil {
		t.Fatal(err)
	}
	e, err := enforce.New(context.Background(), enforce.Options{Counters: counters, Source: enforcetest.StaticSource(enforce.State{}),
		Now: clk.Now, SweepInterval: -1, CacheTTL: 72 * time.Hour, Guard: th, BackendTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return guarded{e, th}, ev
}

// guarded is an Enforcer and the throttle it was built with.
type guarded struct {
	*enforce.Enforcer
	th *auththrottle.Throttle
}

type authEvents struct {
	mu  sync.Mutex
	evs []auththrottle.Event
}

func (a *authEvents) add(ev auththrottle.Event) {
	a.mu.Lock()
	a.evs = append(a.evs, ev)
	a.mu.Unlock()
}

func (a *authEvents) kinds() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var k []string
	for _, ev := range a.evs {
		k = append(k, ev.Kind+" "+ev.Address)
	}
	return k
}

func report(t *testing.T, e guarded, ip string, outcome auththrottle.Outcome) auththrottle.Status {
	t.Helper()
	st, err := e.th.ReportAuth(context.Background(), auththrottle.Report{ClientIP: ip, Outcome: outcome, Identity: "alice"})
	if err != nil {
		t.Fatalf("report %s from %s: %v", outcome, ip, err)
	}
	return st
}

func locked(t *testing.T, e guarded, ip string) auththrottle.Status {
	t.Helper()
	st, err := e.th.Locked(context.Background(), ip)
	if err != nil {
		t.Fatalf("check %s: %v", ip, err)
	}
	return st
}

func authClock() *clock { return enforcefixture.NewClock(enforcefixture.StartOfDay) }

// The basic scenario: 5 failures in 60 s lock the address for
// 300 s, answered 429 with Retry-After before credentials are verified;
// the lockout ends on time.
func TestThrottleLocksAndReleases(t *testing.T) {
	t.Parallel()
	clk := authClock()
	e, events := authEnforcer(t, clk, memory.New(), auththrottle.Options{})
	const ip = "198.51.100.7"
	for i := range 4 {
		if st := report(t, e, ip, auththrottle.Failure); st.Locked {
			t.Fatalf("locked after %d failures, want 5", i+1)
		}
		clk.Advance(10 * time.Second)
	}
	st := report(t, e, ip, auththrottle.Failure)
	if !st.Locked || !st.Started || st.RetryAfter != 300*time.Second {
		t.Fatalf("5th failure within 60 s: %+v, want locked for 300s", st)
	}
	if got := events.kinds(); len(got) != 1 || got[0] != "auth_lockout_started 198.51.100.7" {
		t.Errorf("events = %q, want one auth_lockout_started", got)
	}

	// The gateway's check refuses it, whoever it claims to be.
	c := enforce.Call{Username: "alice", IsAdmin: true, TargetType: "mcp_server", TargetName: "mcpgw", ClientIP: ip}
	d, err := e.Check(context.Background(), c)
	if err != nil || d.Allowed || d.Reason != enforce.ReasonAuthLocked || d.RetryAfter != 300*time.Second {
		t.Fatalf("Check from the locked address = %+v, %v; want auth-locked, retry after 300s", d, err)
	}
	// Through the middlewares: 429 + Retry-After before authentication.
	authenticated := 0
	h := httpgate.AuthMiddleware(e.th, nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { authenticated++ }))
	r := httptest.NewRequest("GET", "/mcp/mcpgw", nil)
	r.RemoteAddr = ip + ":4711"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "300" || authenticated != 0 {
		t.Fatalf("AuthMiddleware: %d Retry-After %q, authenticated %d; want 429, 300, 0", rec.Code, rec.Header().Get("Retry-After"), authenticated)
	}
	mw := httpgate.Middleware(e.Enforcer, func(*http.Request) (enforce.Call, bool) { return c, true }, httpgate.MiddlewareOptions{})(http.NotFoundHandler())
	rec = httptest.NewRecorder()
	mw.ServeHTTP(rec, r)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "300" {
		t.Fatalf("Middleware: %d Retry-After %q; want 429, 300", rec.Code, rec.Header().Get("Retry-After"))
	}

	clk.Advance(299 * time.Second)
	if st := locked(t, e, ip); !st.Locked || st.RetryAfter != time.Second {
		t.Fatalf("1 s before the end: %+v, want locked, retry after 1s", st)
	}
	clk.Advance(time.Second)
	if st := locked(t, e, ip); st.Locked {
		t.Fatalf("after 300 s: %+v, want released", st)
	}
	if got := events.kinds(); len(got) != 2 || got[1] != "auth_lockout_ended 198.51.100.7" {
		t.Errorf("events = %q, want auth_lockout_started then auth_lockout_ended", got)
	}
	// Released, it starts afresh: one failure does not lock it again.
	if st := report(t, e, ip, auththrottle.Failure); st.Locked {
		t.Fatal("one failure after the lockout locked again")
	}
}

func TestThrottleSuccessResetsExpiredDoesNotCount(t *testing.T) {
	t.Parallel()
	clk := authClock()
	e, _ := authEnforcer(t, clk, memory.New(), auththrottle.Options{})
	const ip = "192.0.2.10"
	for range 4 {
		report(t, e, ip, auththrottle.Failure)
	}
	report(t, e, ip, auththrottle.Success)
	for range 4 {
		report(t, e, ip, auththrottle.Failure)
	}
	if st := locked(t, e, ip); st.Locked {
		t.Fatal("failures before a success still counted")
	}
	for range 20 {
		report(t, e, ip, auththrottle.Expired)
	}
	if st := locked(t, e, ip); st.Locked {
		t.Fatal("expired tokens counted as failures")
	}
	if st := report(t, e, ip, auththrottle.Failure); !st.Locked {
		t.Fatal("the 5th failure since the success did not lock")
	}
	// A success cannot lift a lockout.
	if st := report(t, e, ip, auththrottle.Success); !st.Locked {
		t.Fatal("a success released an active lockout")
	}
}

func TestThrottleIPv6ByPrefix(t *testing.T) {
	t.Parallel()
	clk := authClock()
	e, _ := authEnforcer(t, clk, memory.New(), auththrottle.Options{})
	for i := range 5 {
		report(t, e, "2001:db8:1:2::"+strconv.Itoa(i+1), auththrottle.Failure)
	}
	if st := locked(t, e, "2001:db8:1:2:abcd::7"); !st.Locked {
		t.Error("5 failures from one /64 did not lock a second address of it")
	}
	if st := locked(t, e, "2001:db8:1:3::1"); st.Locked {
		t.Error("the next /64 was locked too")
	}
	report(t, e, "::ffff:10.0.0.1", auththrottle.Failure)
	for range 4 {
		report(t, e, "10.0.0.1", auththrottle.Failure)
	}
	if st := locked(t, e, "10.0.0.1"); !st.Locked {
		t.Error("an IPv4-mapped address counted apart from its IPv4 address")
	}
	if st := locked(t, e, "10.0.0.2"); st.Locked {
		t.Error("IPv4 addresses were grouped")
	}
}

// The window slides: failures on both sides of a window boundary (epoch
// aligned or anchored at the first failure) add up when they are within
// 60 s of each other.
func TestThrottleWindowSlides(t *testing.T) {
	t.Parallel()
	clk := authClock()
	clk.Advance(55 * time.Second)
	e, _ := authEnforcer(t, clk, memory.New(), auththrottle.Options{})
	const ip = "203.0.113.50"
	for range 4 {
		report(t, e, ip, auththrottle.Failure)
	}
	clk.Advance(10 * time.Second) // 00:01:05, in the next minute
	if st := report(t, e, ip, auththrottle.Failure); !st.Locked {
		t.Fatal("5 failures within 10 s across a minute boundary did not lock")
	}
	// Spread out, failures age out of the window.
	const other = "203.0.113.51"
	for range 5 {
		if st := report(t, e, other, auththrottle.Failure); st.Locked {
			t.Fatal("one failure every 61 s locked the address")
		}
		clk.Advance(61 * time.Second)
	}
}

// 200,000 failures from fresh addresses leave an existing lockout in
// place, answered from memory, and memory stays bounded. Not parallel: its
// 400,000 round trips would starve the parallel tests' tight deadlines.
func TestThrottleFloodKeepsLockout(t *testing.T) {
	clk := authClock()
	counters := &countingStore{Store: memory.New()}
	e, _ := authEnforcer(t, clk, counters, auththrottle.Options{})
	const victim = "198.51.100.99"
	for range 5 {
		report(t, e, victim, auththrottle.Failure)
	}
	for i := range 200_000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		report(t, e, a.String(), auththrottle.Failure)
	}
	entries, lockouts := e.th.Tracked()
	if entries > 100_000 || lockouts != 1 {
		t.Errorf("cache holds %d entries (%d lockouts); want at most 100000, the victim's lockout among them", entries, lockouts)
	}
	before := counters.takes.Load()
	if st := locked(t, e, victim); !st.Locked {
		t.Fatal("a flood of fresh addresses released an active lockout")
	}
	if n := counters.takes.Load() - before; n != 0 {
		t.Errorf("the lockout was asked of the store (%d round trips): the flood evicted it from memory", n)
	}
}

// A full cache of lockouts admits no newcomer, drops none, and the store
// still answers for addresses it could not cache.
func TestThrottleCacheFullOfLockouts(t *testing.T) {
	t.Parallel()
	clk := authClock()
	e, _ := authEnforcer(t, clk, memory.New(), auththrottle.Options{MaxFailures: 1, MaxTracked: 3})
	for i := range 4 {
		report(t, e, "198.51.100."+strconv.Itoa(i), auththrottle.Failure)
	}
	entries, lockouts := e.th.Tracked()
	if entries != 3 || lockouts != 3 {
		t.Errorf("cache holds %d entries, %d lockouts; want 3, 3", entries, lockouts)
	}
	for i := range 4 {
		if st := locked(t, e, "198.51.100."+strconv.Itoa(i)); !st.Locked {
			t.Errorf("lockout %d lost", i)
		}
	}
}

func TestNormalizeReport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r     auththrottle.Report
		field string
	}{
		{auththrottle.Report{Outcome: "failure"}, "client_ip"},
		{auththrottle.Report{ClientIP: "not-an-ip", Outcome: "failure"}, "client_ip"},
		{auththrottle.Report{ClientIP: "192.0.2.1"}, "outcome"},
		{auththrottle.Report{ClientIP: "192.0.2.1", Outcome: "maybe"}, "outcome"},
		{auththrottle.Report{ClientIP: "192.0.2.1", Outcome: "failure", Identity: string(make([]byte, 257))}, "identity"},
	} {
		_, err := auththrottle.NormalizeReport(tc.r)
		ce, ok := err.(*enforce.CallError)
		if !ok || len(ce.Fields) != 1 || ce.Fields[0].Field != tc.field {
			t.Errorf("NormalizeReport(%+v) = %v, want one error naming %s", tc.r, err, tc.field)
		}
	}
	if r, err := auththrottle.NormalizeReport(auththrottle.Report{ClientIP: "::ffff:192.0.2.1", Outcome: "expired"}); err != nil || r.ClientIP != "192.0.2.1" {
		t.Errorf("a mapped address: %+v, %v", r, err)
	}
}

// An address this replica has not asked about costs a decision no round
// trip of its own: the lockout is asked in the round trip of the call's
// counters (enforcetest.TestAuthLockout checks the answers), and from
// memory after that, until RecheckAfter.
func TestAuthLockoutAskedInTheCallsRoundTrip(t *testing.T) {
	t.Parallel()
	clk := authClock()
	counters := &countingStore{Store: memory.New()}
	th, err := auththrottle.New(counters, auththrottle.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	e, err := enforce.New(context.Background(), enforce.Options{Counters: counters, Source: enforcetest.StaticSource(enforcetest.PolicyState(false)),
		Now: clk.Now, SweepInterval: -1, CacheTTL: 72 * time.Hour, Guard: th})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	call := enforce.Call{ClientIP: "192.0.2.10", TargetType: "mcp_server", TargetName: "s"}
	for i := range 3 {
		if i == 2 {
			clk.Advance(time.Second) // RecheckAfter: the address is asked again
		}
		before := counters.takes.Load()
		d, err := e.Check(context.Background(), call)
		if err != nil || !d.Allowed {
			t.Fatalf("call %d: %s, %v", i+1, d.Reason, err)
		}
		if got := counters.takes.Load() - before; got != 1 {
			t.Errorf("call %d made %d round trips, want 1", i+1, got)
		}
	}
}

type clock = enforcefixture.Clock
