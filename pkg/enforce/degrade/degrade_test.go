package degrade_test

import (
	"cmp"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/degrade"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// clock is a clock the tests move by hand, starting 10 s into an hour.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Now().Truncate(time.Hour).Add(10 * time.Second).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		limit int64
		n     int
		want  int64
	}{{1000, 2, 500}, {1001, 2, 501}, {10, 3, 4}, {1, 3, 1}, {7, 1, 7}, {7, 0, 7}, {7, -1, 7}, {0, 3, 0}} {
		if got := degrade.Share(c.limit, c.n); got != c.want {
			t.Errorf("Share(%d, %d) = %d, want %d", c.limit, c.n, got, c.want)
		}
	}
}

// fixture is one replica over a failing in-memory store.
type fixture struct {
	clock  *clock
	shared *enforcetest.FailingStore
	f      *degrade.Fallback
	e      *enforce.Enforcer
}

// callerDef limits every user to limit calls a minute, counting with
// algo, with fail policy policy.
func callerDef(algo enforce.Algorithm, limit int, policy string) ratelimit.Definition {
	d := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "all", WindowSeconds: 60,
		UserMaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true, Algorithm: string(algo), FailPolicy: policy}
	d.ID = d.Key()
	return d
}

// targetDef limits mcp_server "s" to limit calls a minute.
func targetDef(algo enforce.Algorithm, limit int, policy string) ratelimit.Definition {
	d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s", WindowSeconds: 60,
		MaxRequests: &limit, Enabled: true, Mode: ratelimit.ModeEnforce, Algorithm: string(algo), FailPolicy: policy}
	d.ID = d.Key()
	return d
}

func newFixture(t *testing.T, replicas *atomic.Int64, defaultPolicy string, defs ...ratelimit.Definition) *fixture {
	t.Helper()
	x := &fixture{clock: newClock(), shared: enforcetest.Failing(memory.New(), enforcetest.ErrInjected)}
	x.shared.Repair()
	f, err := degrade.New(degrade.Options{Counters: x.shared, Replicas: func() int { return int(replicas.Load()) },
		Now: x.clock.now, ProbeInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	x.f = f
	x.e = enforcetest.Build(t, enforce.Options{Fallback: f, FailPolicy: defaultPolicy, Now: x.clock.now, BackendTimeout: time.Second,
		SweepInterval: -1, CacheTTL: 24 * time.Hour}, x.shared, enforcetest.StaticSource(enforce.State{Definitions: append(enforcetest.Sentinels(), defs...)}))
	return x
}

func replicas(n int64) *atomic.Int64 {
	var r atomic.Int64
	r.Store(n)
	return &r
}

var call = enforce.Call{Username: "u", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}

// admit makes n calls and counts those allowed.
func (x *fixture) admit(t *testing.T, n int) (allowed int, last enforce.Decision) {
	t.Helper()
	for range n {
		d, _ := x.e.Check(context.Background(), call)
		if d.Allowed {
			allowed++
		}
		last = d
	}
	return allowed, last
}

// TestPolicyPrecedence: a call's fail policy over its gates is closed on
// any enforce gate, then degrade, then open; gates naming none take the
// enforcer's default; under degrade an open gate of the same call passes
// uncounted.
func TestPolicyPrecedence(t *testing.T) {
	t.Parallel()
	const open, closed, deg = ratelimit.FailPolicyOpen, ratelimit.FailPolicyClosed, ratelimit.FailPolicyDegrade
	for _, c := range []struct {
		name                   string
		dflt, caller, target   string
		wantReason             string
		wantDegraded, wantOpen bool
	}{
		{"closed wins over degrade", "", closed, deg, enforce.ReasonFailClosed, false, false},
		{"degrade wins over open", "", open, deg, enforce.ReasonAllowed, true, false},
		{"open and open", "", open, open, enforce.ReasonFailOpen, false, true},
		{"the default degrade fills unnamed gates", deg, "", open, enforce.ReasonAllowed, true, false},
		{"the default closed fills unnamed gates", closed, "", deg, enforce.ReasonFailClosed, false, false},
		{"the default degrade, every gate open", deg, open, open, enforce.ReasonFailOpen, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			x := newFixture(t, replicas(2), c.dflt, callerDef("", 10, c.caller), targetDef("", 4, c.target))
			x.shared.Break()
			d, err := x.e.Check(context.Background(), call)
			if err == nil || d.Reason != c.wantReason || d.Degraded != c.wantDegraded {
				t.Fatalf("reason %s, degraded %v, err %v; want %s, degraded %v, the store's error", d.Reason, d.Degraded, err, c.wantReason, c.wantDegraded)
			}
			if !c.wantDegraded {
				return
			}
			// Only the degrade gates count locally, on their shares (5
			// of the caller's 10, 2 of the target's 4); an open gate
			// passes uncounted.
			effective := func(p string) string { return cmp.Or(p, c.dflt) }
			share := 100
			if effective(c.caller) == deg {
				share = 5
			}
			if effective(c.target) == deg {
				share = 2
			}
			n, last := x.admit(t, 20)
			want := share - 1 // less the call above
			if n != want || last.Reason != enforce.ReasonThrottled || !last.Degraded {
				t.Errorf("%d more admitted (last: %s, degraded %v), want %d", n, last.Reason, last.Degraded, want)
			}
		})
	}
}

// TestNewRefuses: an unknown default policy, degrade without a Fallback,
// and FailClosed beside another policy are refused at New, naming the
// option.
func TestNewRefuses(t *testing.T) {
	t.Parallel()
	src := enforcetest.StaticSource(enforce.State{Definitions: enforcetest.Sentinels()})
	for _, c := range []struct {
		opts enforce.Options
		want string
	}{
		{enforce.Options{FailPolicy: "sometimes"}, `Options.FailPolicy "sometimes"`},
		{enforce.Options{FailPolicy: ratelimit.FailPolicyDegrade}, "needs Options.Fallback"},
		{enforce.Options{FailPolicy: ratelimit.FailPolicyOpen, FailClosed: true}, "Options.FailClosed and Options.FailPolicy"},
	} {
		c.opts.Counters, c.opts.Source = memory.New(), src
		e, err := enforce.New(context.Background(), c.opts)
		if err == nil {
			e.Close()
			t.Errorf("New(%+v) accepted", c.opts)
		} else if !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: %v; want it to say %q", err, c.want)
		}
	}
	if _, err := degrade.New(degrade.Options{Counters: memory.New()}); err == nil || !strings.Contains(err.Error(), "Replicas") {
		t.Errorf("degrade.New without Replicas: %v", err)
	}
}

// TestSharePerAlgorithm: each algorithm counts locally on the share of
// its limit (a token bucket's burst too), read from the live replica
// count at each decision.
func TestSharePerAlgorithm(t *testing.T) {
	t.Parallel()
	for _, algo := range enforcetest.Algorithms() {
		t.Run(string(algo), func(t *testing.T) {
			t.Parallel()
			r := replicas(3)
			x := newFixture(t, r, ratelimit.FailPolicyDegrade, targetDef(algo, 10, ""))
			x.shared.Break()
			if n, last := x.admit(t, 10); n != 4 || !last.Degraded || last.Limit != 4 {
				t.Errorf("3 replicas: %d of 10 admitted (limit %d, degraded %v), want ceil(10/3) = 4", n, last.Limit, last.Degraded)
			}
			if x.f.Owed() != 4 {
				t.Errorf("owed %d, want 4", x.f.Owed())
			}
		})
	}
}

// TestWindowOverIsDropped: what a window admitted locally is not reported
// once the window is over (it counts for nothing any more), and the new
// window admits its whole limit on the shared counters.
func TestWindowOverIsDropped(t *testing.T) {
	t.Parallel()
	x := newFixture(t, replicas(2), ratelimit.FailPolicyDegrade, targetDef(enforce.AlgorithmFixedWindow, 10, ""))
	x.shared.Break()
	if n, _ := x.admit(t, 5); n != 5 {
		t.Fatalf("during the outage: %d of 5 admitted", n)
	}
	x.clock.advance(time.Minute)
	x.shared.Repair()
	if n, last := x.admit(t, 12); n != 10 || last.Degraded {
		t.Errorf("the next window: %d of 12 admitted (degraded %v), want 10", n, last.Degraded)
	}
	if x.f.Pending() {
		t.Error("still degraded after the store answered")
	}
}

// TestTokenBucketReport: a bucket's report is what it admitted less what
// has dripped back since its last admission, at the whole rate.
func TestTokenBucketReport(t *testing.T) {
	t.Parallel()
	// 60 a minute: one token a second, burst 60; share of 2: 30.
	x := newFixture(t, replicas(2), ratelimit.FailPolicyDegrade, targetDef(enforce.AlgorithmTokenBucket, 60, ""))
	x.shared.Break()
	if n, _ := x.admit(t, 40); n != 30 {
		t.Fatalf("during the outage: %d of 40 admitted, want 30", n)
	}
	x.clock.advance(10 * time.Second) // 10 tokens back: 20 owed
	x.shared.Repair()
	if n, _ := x.admit(t, 60); n != 40 {
		t.Errorf("after the store is back: %d admitted, want 60 - 20 = 40", n)
	}
}

// TestReportFails: a report the store refuses keeps what is owed, the
// calls are decided locally meanwhile, and the next report writes it
// once, exactly.
func TestReportFails(t *testing.T) {
	t.Parallel()
	x := newFixture(t, replicas(2), ratelimit.FailPolicyDegrade, targetDef(enforce.AlgorithmFixedWindow, 10, ""))
	x.shared.Break()
	if n, _ := x.admit(t, 3); n != 3 {
		t.Fatalf("during the outage: %d of 3 admitted", n)
	}
	for range 3 {
		if err := x.f.Report(context.Background()); err == nil {
			t.Fatal("a report while the store fails answered no error")
		}
	}
	if x.f.Owed() != 3 || !x.f.Pending() {
		t.Fatalf("after failed reports: owed %d, pending %v; want 3 owed", x.f.Owed(), x.f.Pending())
	}
	if n, last := x.admit(t, 1); n != 1 || !last.Degraded {
		t.Fatalf("a call while reports fail: admitted %d, degraded %v; want decided locally", n, last.Degraded)
	}
	x.shared.Repair()
	if n, _ := x.admit(t, 10); n != 6 {
		t.Errorf("after the store is back: %d admitted, want 10 - 4 = 6 (each admission reported once)", n)
	}
}

// TestProbeReports: a replica no call reaches reports on its own once the
// store is back, and leaves the degraded mode.
func TestProbeReports(t *testing.T) {
	t.Parallel()
	shared := enforcetest.Failing(memory.New(), enforcetest.ErrInjected)
	c := newClock()
	f, err := degrade.New(degrade.Options{Counters: shared, Replicas: func() int { return 2 }, Now: c.now, ProbeInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := enforce.CounterGate{Key: "probe-test", Algorithm: enforce.AlgorithmFixedWindow, Window: time.Minute, Limit: 10, Enforce: true}
	res := f.Take(enforce.TakeRequest{Gates: []enforce.CounterGate{g}, Cost: 3, Consume: true, Now: c.now()})
	if !res.Allowed || !f.Degraded() {
		t.Fatalf("local take: allowed %v, degraded %v", res.Allowed, f.Degraded())
	}
	shared.Repair()
	deadline := time.Now().Add(30 * time.Second)
	for f.Degraded() {
		if time.Now().After(deadline) {
			t.Fatal("the probe did not report within 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	got, err := shared.Take(context.Background(), []enforce.TakeRequest{{Gates: []enforce.CounterGate{g}, Cost: 1, Now: c.now()}}, time.Now().Add(time.Second))
	if err != nil || got[0].States[0].Count != 3 {
		t.Errorf("the shared counter after the probe: %+v, %v; want 3 counted", got, err)
	}
}

// TestSettle: once the store answers, the replica keeps deciding locally
// for Settle (reporting what it admits meanwhile), so that the other
// replicas' probes report before any of them decides on the shared
// counters again; then it leaves the degraded mode.
func TestSettle(t *testing.T) {
	t.Parallel()
	shared := enforcetest.Failing(memory.New(), enforcetest.ErrInjected)
	c := newClock()
	const settle = 300 * time.Millisecond
	f, err := degrade.New(degrade.Options{Counters: shared, Replicas: func() int { return 2 }, Now: c.now, ProbeInterval: -1, Settle: settle})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := enforce.CounterGate{Key: "settle-test", Algorithm: enforce.AlgorithmFixedWindow, Window: time.Minute, Limit: 10, Enforce: true}
	take := func() bool {
		return f.Take(enforce.TakeRequest{Gates: []enforce.CounterGate{g}, Cost: 1, Consume: true, Now: c.now()}).Allowed
	}
	take()
	shared.Repair()
	start := time.Now()
	if err := f.Report(context.Background()); err == nil {
		t.Fatal("the first report after the outage ended the degraded mode at once")
	}
	take() // while settling: decided locally, owed, and reported below
	for f.Report(context.Background()) != nil {
		time.Sleep(10 * time.Millisecond)
	}
	if waited := time.Since(start); waited < settle {
		t.Errorf("left the degraded mode after %v, want at least %v", waited, settle)
	}
	got, err := shared.Take(context.Background(), []enforce.TakeRequest{{Gates: []enforce.CounterGate{g}, Cost: 1, Now: c.now()}}, time.Now().Add(time.Second))
	if err != nil || got[0].States[0].Count != 2 || f.Degraded() {
		t.Errorf("after settling: %+v, %v, degraded %v; want both admissions counted", got, err, f.Degraded())
	}
}
