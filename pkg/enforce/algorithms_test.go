package enforce_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/enforcefixture"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// memFixture is an Enforcer over the in-memory counter store and a static
// source, on a fixed clock at the start of a day: how the algorithms are
// tested through the Enforcer until the PostgreSQL store counts them all.
// Its store records the gates of the last call it was sent.
type memFixture struct {
	T     *testing.T
	E     *enforce.Enforcer
	src   *enforcetest.Static
	rec   *recorder
	Clock *clock
	state enforce.State
}

func newMemFixture(t *testing.T, defs ...ratelimit.Definition) *memFixture {
	t.Helper()
	f := &memFixture{T: t, Clock: enforcefixture.NewClock(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)),
		rec: &recorder{CounterStore: memory.New()}}
	f.state = enforce.State{Definitions: enforcetest.Sentinels()}
	for _, d := range defs {
		f.state.Definitions = append(f.state.Definitions, withID(d))
	}
	f.src = enforcetest.StaticSource(f.state)
	e, err := enforce.New(context.Background(), enforce.Options{Counters: f.rec, Source: f.src, Now: f.Clock.Now,
		CacheTTL: 72 * time.Hour, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	f.E = e
	return f
}

func withID(d ratelimit.Definition) ratelimit.Definition {
	if d.Mode == "" {
		d.Mode = ratelimit.ModeEnforce
	}
	d.ID = d.Key()
	return d
}

func (f *memFixture) Member(subjectType, subject string, groups ...string) {
	f.T.Helper()
	f.state.Memberships = append(f.state.Memberships, ratelimit.Membership{SubjectType: subjectType, Subject: subject, Groups: groups})
	f.src.Set(f.state)
	if err := f.E.Refresh(context.Background()); err != nil {
		f.T.Fatal(err)
	}
}

func (f *memFixture) Check(c enforce.Call) enforce.Decision {
	f.T.Helper()
	d, err := f.E.Check(context.Background(), c)
	if err != nil {
		f.T.Fatalf("check %+v: %v", c, err)
	}
	return d
}

// headers are the rate-limit headers of d at the fixture's now.
func (f *memFixture) headers(d enforce.Decision) http.Header {
	h := http.Header{}
	httpgate.SetHeaders(h, d, f.Clock.Now())
	return h
}

func wantHeaders(t *testing.T, what string, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

// recorder is a counter store that passes every call on and keeps the
// gates of the last Take.
type recorder struct {
	enforce.CounterStore
	mu   sync.Mutex
	last []enforce.CounterGate
}

func (r *recorder) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	r.mu.Lock()
	if len(reqs) > 0 {
		r.last = slices.Clone(reqs[len(reqs)-1].Gates)
	}
	r.mu.Unlock()
	return r.CounterStore.Take(ctx, reqs, deadline)
}

func (r *recorder) gates() []enforce.CounterGate {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.last)
}

func tokenBucket(d ratelimit.Definition, burst *int) ratelimit.Definition {
	d.Algorithm = ratelimit.AlgorithmTokenBucket
	switch d.Axis {
	case ratelimit.AxisTarget:
		d.Burst = burst
	default:
		d.UserBurst, d.AgentBurst = burst, burst
	}
	return d
}

func sliding(d ratelimit.Definition) ratelimit.Definition {
	d.Algorithm = ratelimit.AlgorithmSlidingWindow
	return d
}

// TestTokenBucketDecision: a typical API class (120 a minute, burst 30)
// as a target definition: the burst passes at a frozen clock, the headers
// after one call are r=29, t=1 and the policy carries the burst; the call
// past the burst is throttled with Retry-After 1 (the missing token's
// 0.5 s, rounded up) and passes when that token is in; 1.2 s later r and
// t follow the refill.
func TestTokenBucketDecision(t *testing.T) {
	t.Parallel()
	d := tokenBucket(target("mcp_server", "s", 60, 120), ptr(30))
	f := newMemFixture(t, d)
	t0 := f.Clock.Now()
	first := f.Check(user("alice", "s"))
	if !first.Allowed || first.Limit != 120 || first.Remaining != 29 || !first.Reset.Equal(t0.Add(500*time.Millisecond)) {
		t.Fatalf("first call: %+v, want allowed, limit 120, remaining 29, reset in 0.5 s", first)
	}
	if g := first.Gates[0]; g.Algorithm != enforce.AlgorithmTokenBucket || g.Burst != 30 || g.Count != 1 {
		t.Errorf("gate: algorithm %q burst %d count %d, want token_bucket, 30, 1 (token missing)", g.Algorithm, g.Burst, g.Count)
	}
	wantHeaders(t, "first call", f.headers(first), map[string]string{
		"RateLimit-Policy":      `"target:mcp_server:s:60";q=120;w=60;rlctl-burst=30`,
		"RateLimit":             `"target:mcp_server:s:60";r=29;t=1`,
		"X-RateLimit-Limit":     "120",
		"X-RateLimit-Remaining": "29",
		"X-RateLimit-Reset":     "1772409601", // t0 + 0.5 s, rounded up
		"Retry-After":           "",
	})
	for i := 2; i <= 30; i++ {
		if !f.Check(user("alice", "s")).Allowed {
			t.Fatalf("call %d of burst 30 denied", i)
		}
	}
	denied := f.Check(user("alice", "s"))
	if denied.Allowed || denied.Reason != enforce.ReasonThrottled || denied.RetryAfter != time.Second {
		t.Fatalf("call 31: %+v, want throttled with RetryAfter 1s", denied)
	}
	if g := denied.Denied[0]; g.RetryAfter != 500*time.Millisecond || g.Remaining != 0 || !g.Reset.Equal(t0.Add(15*time.Second)) {
		t.Errorf("denying gate: retry %v remaining %d reset %v, want 500ms, 0, full in 15 s", g.RetryAfter, g.Remaining, g.Reset.Sub(t0))
	}
	wantHeaders(t, "call 31", f.headers(denied), map[string]string{
		"RateLimit":   `"target:mcp_server:s:60";r=0;t=15`,
		"Retry-After": "1",
	})
	f.Clock.Advance(500*time.Millisecond - time.Nanosecond)
	if f.Check(user("alice", "s")).Allowed {
		t.Error("allowed a nanosecond before the token was in")
	}
	f.Clock.Advance(time.Nanosecond)
	if !f.Check(user("alice", "s")).Allowed {
		t.Error("denied when the token was in")
	}
	// 1.2 s after the burst, 2.4 - 1 taken = 1.4 tokens are left: a peek
	// says r=1, and the bucket is full in 15.5 - 1.2 = 14.3 s: t=15.
	f.Clock.Advance(700 * time.Millisecond)
	d2, err := f.E.Peek(context.Background(), user("alice", "s"))
	if err != nil || !d2.Allowed {
		t.Fatalf("peek 1.2 s on: %+v %v", d2, err)
	}
	wantHeaders(t, "1.2 s on", f.headers(d2), map[string]string{
		"RateLimit": `"target:mcp_server:s:60";r=1;t=15`,
	})
	// A call of cost 3 needs three whole tokens: 1.4 are there, the
	// missing 1.6 take 0.8 s.
	c := user("alice", "s")
	c.Cost = 3
	d3 := f.Check(c)
	if d3.Allowed || d3.Denied[0].RetryAfter != 800*time.Millisecond || d3.RetryAfter != time.Second {
		t.Errorf("cost 3 with 1.4 tokens: %+v, want throttled, gate retry 0.8s, RetryAfter 1s", d3)
	}
}

// TestSlidingWindowDecision: 3 per 10 s, three calls at 9.5 s; at the
// next window's start the call is throttled and Retry-After is when the
// weighted count leaves room (3.334 s on, rounded up to 4), not the
// window's end; it passes then.
func TestSlidingWindowDecision(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t, sliding(target("mcp_server", "s", 10, 3)))
	t0 := f.Clock.Now()
	f.Clock.Advance(9500 * time.Millisecond)
	for i := range 3 {
		if d := f.Check(user("alice", "s")); !d.Allowed || d.Remaining != int64(2-i) {
			t.Fatalf("call %d: %+v", i+1, d)
		}
	}
	f.Clock.Advance(500 * time.Millisecond)
	d := f.Check(user("alice", "s"))
	if d.Allowed || d.RetryAfter != 4*time.Second || d.Denied[0].RetryAfter != 3334*time.Millisecond {
		t.Fatalf("at the next window: %+v, want throttled, RetryAfter 4s (gate: 3.334s)", d)
	}
	if g := d.Gates[0]; g.Algorithm != enforce.AlgorithmSlidingWindow || g.Count != 0 || !g.Reset.Equal(t0.Add(20*time.Second)) {
		t.Errorf("gate: %+v, want sliding_window, count 0, reset when the previous window stops weighing (20 s)", g)
	}
	wantHeaders(t, "at the next window", f.headers(d), map[string]string{
		"RateLimit-Policy": `"target:mcp_server:s:10";q=3;w=10`,
		"RateLimit":        `"target:mcp_server:s:10";r=0;t=10`,
		"Retry-After":      "4",
	})
	f.Clock.Advance(3333 * time.Millisecond)
	if f.Check(user("alice", "s")).Allowed {
		t.Error("allowed at 3.333 s")
	}
	f.Clock.Advance(time.Millisecond)
	if d := f.Check(user("alice", "s")); !d.Allowed || d.Gates[0].Count != 1 {
		t.Errorf("at 3.334 s: %+v, want allowed, count 1", d)
	}
}

// TestMixedAlgorithmsAllOrNothing: a call through a fixed-window caller
// limit, a token-bucket caller limit and a sliding-window target limit:
// when the bucket is empty the call is throttled and neither window is
// charged; RateLimit-Policy lists all three.
func TestMixedAlgorithmsAllOrNothing(t *testing.T) {
	t.Parallel()
	fixed := callerGroup("dev", 60, ptr(100), nil)
	bucket := tokenBucket(callerGroup("bursty", 60, ptr(60), nil), ptr(2))
	win := sliding(target("mcp_server", "s", 60, 50))
	f := newMemFixture(t, fixed, bucket, win)
	f.Member("user", "alice", "dev", "bursty")
	for i := range 2 {
		if d := f.Check(user("alice", "s")); !d.Allowed || len(d.Gates) != 3 {
			t.Fatalf("call %d: %+v, want allowed over three gates", i+1, d)
		}
	}
	d := f.Check(user("alice", "s"))
	if d.Allowed || len(d.Denied) != 1 || d.Denied[0].DefinitionID != bucket.Key() {
		t.Fatalf("call 3: %+v, want throttled by the bucket alone", d)
	}
	for _, g := range d.Gates {
		if g.Algorithm != enforce.AlgorithmTokenBucket && g.Count != 2 {
			t.Errorf("%s (%s) counts %d after a throttled call, want 2", g.DefinitionID, g.Algorithm, g.Count)
		}
	}
	want := `"caller:group:bursty:60";q=60;w=60;rlctl-burst=2, "caller:group:dev:60";q=100;w=60, "target:mcp_server:s:60";q=50;w=60`
	wantHeaders(t, "throttled", f.headers(d), map[string]string{
		"RateLimit-Policy": want,
		"RateLimit":        `"caller:group:bursty:60";r=0;t=2`,
		"Retry-After":      "1",
	})
	f.Clock.Advance(time.Second) // one token back
	if d := f.Check(user("alice", "s")); !d.Allowed {
		t.Fatalf("a second later: %+v", d)
	}
	peek, _ := f.E.Peek(context.Background(), user("alice", "s"))
	for _, g := range peek.Gates {
		if g.Algorithm != enforce.AlgorithmTokenBucket && g.Count != 3 {
			t.Errorf("%s counts %d, want 3 (the throttled call took nothing)", g.DefinitionID, g.Count)
		}
	}
}

// TestCallerBucketsPerAlgorithm: caller definitions of one window share a
// bucket per algorithm: the lowest limit wins, then the lowest burst; a
// fixed window's key is what it always was, the bucket's is its own.
func TestCallerBucketsPerAlgorithm(t *testing.T) {
	t.Parallel()
	f := newMemFixture(t,
		callerGroup("a", 60, ptr(30), nil),
		tokenBucket(callerGroup("b", 60, ptr(40), nil), ptr(10)),
		tokenBucket(callerGroup("c", 60, ptr(40), nil), ptr(5)),
		tokenBucket(callerGroup("d", 60, ptr(50), nil), nil),
		callerGroup("e", 60, ptr(35), nil),
	)
	f.Member("user", "alice", "a", "b", "c", "d", "e")
	d := f.Check(user("alice", "s"))
	if len(d.Gates) != 2 {
		t.Fatalf("gates %+v, want two (one per algorithm)", d.Gates)
	}
	byAlgo := map[enforce.Algorithm]enforce.Gate{}
	for _, g := range d.Gates {
		byAlgo[g.Algorithm] = g
	}
	if g := byAlgo[enforce.AlgorithmFixedWindow]; g.DefinitionID != "caller:group:a:60" || g.Limit != 30 {
		t.Errorf("fixed window gate %+v, want group a (30)", g)
	}
	if g := byAlgo[enforce.AlgorithmTokenBucket]; g.DefinitionID != "caller:group:c:60" || g.Limit != 40 || g.Burst != 5 {
		t.Errorf("token bucket gate %+v, want group c (40, burst 5)", g)
	}
	keys := []string{}
	for _, g := range f.rec.gates() {
		keys = append(keys, g.Key)
	}
	bucket := counterkey.Caller(60, "user:alice")
	bucket.Algorithm = enforce.AlgorithmTokenBucket
	if want := []string{bucket.String(), counterkey.Caller(60, "user:alice").String()}; !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
}

// TestCounterKeysPerAlgorithm: every kind of key keeps its fixed-window
// bytes, and marks the other algorithms, so that a definition that
// changes algorithm starts on a fresh counter.
func TestCounterKeysPerAlgorithm(t *testing.T) {
	t.Parallel()
	shadow := callerTarget("trial", 60, 100)
	shadow.Mode = ratelimit.ModeShadow
	for _, c := range []struct {
		algo string
		want []string
	}{
		{"", []string{"ct|60|user:alice|mcp_server:s", "s|caller_target:group:trial:60|user:alice|mcp_server:s", "t|target:mcp_server:s:60",
			"t|target:server_group:g:60|s"}},
		{ratelimit.AlgorithmTokenBucket, []string{"ct.tb|60|user:alice|mcp_server:s", "s.tb|caller_target:group:trial:60|user:alice|mcp_server:s",
			"t.tb|target:mcp_server:s:60", "t.tb|target:server_group:g:60|s"}},
		{ratelimit.AlgorithmSlidingWindow, []string{"ct.sw|60|user:alice|mcp_server:s", "s.sw|caller_target:group:trial:60|user:alice|mcp_server:s",
			"t.sw|target:mcp_server:s:60", "t.sw|target:server_group:g:60|s"}},
	} {
		defs := []ratelimit.Definition{callerTarget("dev", 60, 100), shadow, target("mcp_server", "s", 60, 100), serverGroup("g", 60, 100, "s")}
		for i := range defs {
			defs[i].Algorithm = c.algo
		}
		f := newMemFixture(t, defs...)
		f.Member("user", "alice", "dev", "trial")
		f.Check(user("alice", "s"))
		var keys []string
		for _, g := range f.rec.gates() {
			keys = append(keys, g.Key)
			if want := enforce.Algorithm(ratelimit.Definition{Algorithm: c.algo}.AlgorithmOrDefault()); g.Algorithm != want {
				t.Errorf("%q: algorithm %q, want %q", g.Key, g.Algorithm, want)
			}
		}
		if !slices.Equal(keys, c.want) {
			t.Errorf("algorithm %q: keys %q, want %q", c.algo, keys, c.want)
		}
	}
}
