package enforcetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// hangBound bounds every Take the suite makes: a store that answers
// nothing fails the check instead of hanging the test binary. It is never
// a timed assertion: a store that answers in time passes whatever it took.
const hangBound = 10 * time.Second

// algorithm is one entry of the algorithms table: how to build a gate of
// the algorithm that admits limit calls at one instant from a fresh
// counter, and the checks of the algorithm's own notion of time.
type algorithm struct {
	// gate builds a counter gate that, at a single instant, admits
	// exactly limit units from an empty counter.
	gate func(key string, limit int64) enforce.CounterGate
	// start is an instant the generic checks run at: for windowed
	// algorithms, well inside a window, so a check never straddles one.
	start func() time.Time
	// checks are the algorithm's own cases (time, roll-over, Sweep).
	checks []check
}

// check is one named case of the suite.
type check struct {
	name string
	run  func(t *testing.T, s enforce.CounterStore, a algorithm)
}

// algorithms is the table of algorithms the suite knows. A new algorithm
// adds its entry here (a gate builder and its time checks); the generic
// checks then run against it too.
var algorithms = map[enforce.Algorithm]algorithm{
	enforce.AlgorithmFixedWindow: {
		gate: func(key string, limit int64) enforce.CounterGate {
			return enforce.CounterGate{Key: key, Algorithm: enforce.AlgorithmFixedWindow,
				Window: time.Minute, Limit: limit, Enforce: true}
		},
		// Ten seconds into a minute that starts on the hour after the
		// wall clock: aligned, and near enough to now for any store.
		start: func() time.Time { return windowStart(time.Hour).Add(10 * time.Second) },
		checks: []check{
			{"window rolls over at the epoch-aligned boundary", fixedWindowRollsOver},
			{"a new window starts from zero whatever the last one took", fixedWindowFreshStart},
			{"sweep removes ended windows, never a live one", fixedWindowSweep},
		},
	},
	enforce.AlgorithmSlidingWindow: {
		gate: func(key string, limit int64) enforce.CounterGate {
			return enforce.CounterGate{Key: key, Algorithm: enforce.AlgorithmSlidingWindow,
				Window: time.Minute, Limit: limit, Enforce: true}
		},
		// Inside a minute whose previous minute no key of the suite has
		// touched: at one instant the gate admits exactly its limit.
		start: func() time.Time { return windowStart(time.Hour).Add(10 * time.Second) },
		checks: []check{
			{"at most the limit across a boundary where the fixed window admits twice it", slidingAcrossBoundary},
			{"the previous window weighs in by the part still inside the sliding window", slidingWeighs},
			{"sweep never removes a window that still weighs in", slidingSweep},
		},
	},
	enforce.AlgorithmTokenBucket: {
		gate: func(key string, limit int64) enforce.CounterGate {
			return enforce.CounterGate{Key: key, Algorithm: enforce.AlgorithmTokenBucket,
				Window: time.Minute, Limit: limit, Burst: limit, Enforce: true}
		},
		start: func() time.Time { return windowStart(time.Hour).Add(10 * time.Second) },
		checks: []check{
			{"burst then deny at a frozen clock, Retry-After the missing tokens' time", bucketBurstThenDeny},
			{"refills at the sustained rate, a cost needs whole tokens", bucketRefill},
			{"never above the burst however long it idles", bucketNeverAboveBurst},
			{"burst 0 is the limit; the emission interval rounds up", bucketDefaults},
			{"sweep removes full buckets only", bucketSweep},
		},
	},
}

// Algorithms lists every algorithm the suite knows, in its order.
func Algorithms() []enforce.Algorithm {
	names := make([]enforce.Algorithm, 0, len(algorithms))
	for name := range algorithms {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// generic are the checks every algorithm runs.
var generic = []check{
	{"admits exactly the limit", admitsLimit},
	{"cost takes that much; a cost that does not fit takes nothing", cost},
	{"all or nothing across gates", allOrNothing},
	{"shadow gates count while they have room and never deny", shadowGates},
	{"peek decides and takes nothing", peek},
	{"calls of one batch see each other in order", batchOrder},
	{"exact under concurrency", concurrency},
	{"keys with any bytes are distinct", keyBytes},
	{"a deadline already passed consumes nothing", pastDeadline},
	{"an empty batch is answered empty", emptyBatch},
	{"a limit is the call's, not the counter's", limitOfTheCall},
	{"a reset key counts from zero, other keys untouched", resets},
}

// Opts narrow the suite for a store that does not count every algorithm
// yet.
type Opts struct {
	// Algorithms are the algorithms the store counts (nil: Algorithms()). The
	// checks of the others are skipped, and so are the mixed checks when
	// fewer than two remain.
	Algorithms []enforce.Algorithm
}

func (o Opts) algorithms() []enforce.Algorithm {
	if o.Algorithms == nil {
		return Algorithms()
	}
	return o.Algorithms
}

func optsOf(opts []Opts) Opts {
	if len(opts) > 0 {
		return opts[0]
	}
	return Opts{}
}

// TestCounterStore runs the conformance suite against the stores open
// builds: one fresh, empty store per subtest (open registers its own
// cleanup with t). Subtests run in parallel. Every algorithm is checked
// (the generic checks and its own), then gates of different algorithms
// mixed in one call; opts (at most one) may narrow the algorithms.
func TestCounterStore(t *testing.T, open func(t *testing.T) enforce.CounterStore, opts ...Opts) {
	t.Helper()
	algos := optsOf(opts).algorithms()
	for _, name := range Algorithms() {
		a := algorithms[name]
		t.Run(string(name), func(t *testing.T) {
			if !slices.Contains(algos, name) {
				t.Skipf("the store does not count %s (enforcetest.Opts)", name)
			}
			t.Parallel()
			for _, c := range append(slices.Clone(generic), a.checks...) {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, open(t), a)
				})
			}
		})
	}
	t.Run("declared capabilities hold", func(t *testing.T) {
		t.Parallel()
		capabilities(t, open(t))
	})
	t.Run("mixed", func(t *testing.T) {
		if len(algos) < 2 {
			t.Skip("the store counts one algorithm: nothing to mix")
		}
		t.Parallel()
		for _, c := range mixed {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.run(t, open(t), algos)
			})
		}
	})
}

// windowStart is the start of the window of length w after the current
// one, by the Unix epoch.
func windowStart(w time.Duration) time.Time {
	s := int64(w / time.Second)
	return time.Unix((time.Now().Unix()/s+1)*s, 0)
}

// outcome is one call's TakeResult with what each gate has used at the
// call's instant (see used).
type outcome struct {
	enforce.TakeResult
	used []int64
}

// take calls s.Take with a deadline that only bounds a hang.
func take(t *testing.T, s enforce.CounterStore, reqs ...enforce.TakeRequest) []outcome {
	t.Helper()
	res, err := s.Take(context.Background(), reqs, time.Now().Add(hangBound))
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("Take answered %d results for %d calls", len(res), len(reqs))
	}
	out := make([]outcome, len(res))
	for i, r := range res {
		if len(r.States) != len(reqs[i].Gates) || len(r.Room) != len(reqs[i].Gates) {
			t.Fatalf("call %d: %d states and %d rooms for %d gates", i, len(r.States), len(r.Room), len(reqs[i].Gates))
		}
		out[i] = outcome{TakeResult: r, used: make([]int64, len(r.States))}
		for j, st := range r.States {
			out[i].used[j] = used(reqs[i].Gates[j], st, reqs[i].Now)
		}
	}
	return out
}

// used is what a gate's state says is used at now, in units: a window's
// count (the current window's), or a token bucket's missing tokens,
// rounded up (at one instant, what the calls took from a full bucket).
func used(g enforce.CounterGate, st enforce.GateState, now time.Time) int64 {
	if g.Algorithm != enforce.AlgorithmTokenBucket {
		return st.Count
	}
	if st.TAT.IsZero() || !st.TAT.After(now) {
		return 0
	}
	T := interval(g)
	return (int64(st.TAT.Sub(now)) + T - 1) / T
}

// interval is a token bucket's emission interval, ceil(Window / Limit) ns.
func interval(g enforce.CounterGate) int64 {
	return (int64(g.Window) + g.Limit - 1) / g.Limit
}

// call builds a consuming request over gates (sorted by key, as the
// Enforcer sends them).
func call(now time.Time, cost int64, gates ...enforce.CounterGate) enforce.TakeRequest {
	gates = slices.Clone(gates)
	slices.SortFunc(gates, func(a, b enforce.CounterGate) int { return strings.Compare(a.Key, b.Key) })
	return enforce.TakeRequest{Gates: gates, Cost: cost, Consume: true, Now: now}
}

// peekOf is the request for a peek of gates.
func peekOf(now time.Time, cost int64, gates ...enforce.CounterGate) enforce.TakeRequest {
	r := call(now, cost, gates...)
	r.Consume = false
	return r
}

// countOf peeks at one gate and returns its count.
func countOf(t *testing.T, s enforce.CounterStore, now time.Time, g enforce.CounterGate) int64 {
	t.Helper()
	return take(t, s, peekOf(now, 1, g))[0].used[0]
}

// expect checks what a test expects of one call: allowed, what each gate
// has used (a window's count, a bucket's missing tokens) and its room.
func expect(t *testing.T, what string, got outcome, allowed bool, counts []int64, room []bool) {
	t.Helper()
	if got.Allowed != allowed || !slices.Equal(got.used, counts) || !slices.Equal(got.Room, room) {
		t.Errorf("%s: allowed=%v used=%v room=%v, want allowed=%v used=%v room=%v",
			what, got.Allowed, got.used, got.Room, allowed, counts, room)
	}
}

// limitOfTheCall: a gate's limit (a token bucket's burst) is the call's,
// not the counter's: the same key taken with a lower one counts on the same
// counter (the Enforcer checks a counter a call names twice that way), and
// a fixed window taken with a limit out of reach counts past its usual one,
// which then denies (the Enforcer counts Envoy's descriptors over their
// limits that way).
func limitOfTheCall(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := a.gate("limit-of-call", 5)
	expect(t, "cost 3 of 5", take(t, s, call(now, 3, g))[0], true, []int64{3}, []bool{true})
	low := g
	if g.Algorithm == enforce.AlgorithmTokenBucket {
		low.Burst = 3
	} else {
		low.Limit = 3
	}
	expect(t, "cost 1 with the limit lowered to 3", take(t, s, call(now, 1, low))[0], false, []int64{3}, []bool{false})
	expect(t, "cost 2 of 5", take(t, s, call(now, 2, g))[0], true, []int64{5}, []bool{true})
	if g.Algorithm != enforce.AlgorithmFixedWindow {
		return
	}
	high := g
	high.Limit = 1 << 52
	expect(t, "cost 4 with the limit out of reach", take(t, s, call(now, 4, high))[0], true, []int64{9}, []bool{true})
	expect(t, "cost 1 of 5 with 9 counted", take(t, s, call(now, 1, g))[0], false, []int64{9}, []bool{false})
}

// admitsLimit: a gate admits exactly Limit unit calls, each reporting its
// count, and denies the next one, which takes nothing.
func admitsLimit(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := a.gate("limit", 5)
	for i := int64(1); i <= 5; i++ {
		expect(t, fmt.Sprintf("call %d of 5", i), take(t, s, call(now, 1, g))[0], true, []int64{i}, []bool{true})
	}
	expect(t, "call 6 of 5", take(t, s, call(now, 1, g))[0], false, []int64{5}, []bool{false})
	if got := countOf(t, s, now, g); got != 5 {
		t.Errorf("count after a denied call = %d, want 5 (a denied call takes nothing)", got)
	}
}

// cost: a call of cost n takes n; one that does not fit in what is left
// takes nothing, and a smaller one still fits after it.
func cost(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := a.gate("cost", 10)
	expect(t, "cost 4", take(t, s, call(now, 4, g))[0], true, []int64{4}, []bool{true})
	expect(t, "cost 7 with 6 left", take(t, s, call(now, 7, g))[0], false, []int64{4}, []bool{false})
	expect(t, "cost 6 with 6 left", take(t, s, call(now, 6, g))[0], true, []int64{10}, []bool{true})
	expect(t, "cost 1 with none left", take(t, s, call(now, 1, g))[0], false, []int64{10}, []bool{false})
	big := a.gate("cost-big", 3)
	expect(t, "cost above the limit", take(t, s, call(now, 4, big))[0], false, []int64{0}, []bool{false})
}

// allOrNothing: one full enforce gate denies the call and no other gate of
// it is charged; a call whose gates all have room is charged on each.
func allOrNothing(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	full, g1, g2 := a.gate("aon-b-full", 1), a.gate("aon-a", 10), a.gate("aon-c", 10)
	take(t, s, call(now, 1, full))
	res := take(t, s, call(now, 1, g1, full, g2))[0] // sorted: a, b-full, c
	expect(t, "call with one full gate", res, false, []int64{0, 1, 0}, []bool{true, false, true})
	if c1, c2 := countOf(t, s, now, g1), countOf(t, s, now, g2); c1 != 0 || c2 != 0 {
		t.Errorf("a denied call charged its other gates: counts %d and %d, want 0 and 0", c1, c2)
	}
	res = take(t, s, call(now, 2, g1, g2))[0]
	expect(t, "call with room on both gates", res, true, []int64{2, 2}, []bool{true, true})
}

// shadowGates: a shadow gate (Enforce false) counts while it has room,
// reports Room false once it would deny, and never denies; while it is
// full the call still passes and charges its enforce gates. An enforce
// gate that denies leaves the shadow gate uncharged too.
func shadowGates(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	shadow := a.gate("shadow-s", 2)
	shadow.Enforce = false
	enf := a.gate("shadow-e", 4)
	for i := int64(1); i <= 2; i++ {
		expect(t, fmt.Sprintf("call %d, shadow has room", i), take(t, s, call(now, 1, enf, shadow))[0],
			true, []int64{i, i}, []bool{true, true})
	}
	// Sorted: shadow-e (enforce), shadow-s (shadow).
	expect(t, "call 3, shadow full", take(t, s, call(now, 1, enf, shadow))[0], true, []int64{3, 2}, []bool{true, false})
	expect(t, "call 4, shadow full", take(t, s, call(now, 1, enf, shadow))[0], true, []int64{4, 2}, []bool{true, false})
	expect(t, "call 5, enforce full", take(t, s, call(now, 1, enf, shadow))[0], false, []int64{4, 2}, []bool{false, false})
	alone := a.gate("shadow-alone", 1)
	alone.Enforce = false
	expect(t, "shadow gate alone, room", take(t, s, call(now, 1, alone))[0], true, []int64{1}, []bool{true})
	expect(t, "shadow gate alone, full", take(t, s, call(now, 1, alone))[0], true, []int64{1}, []bool{false})

	// A denied call charges no shadow gate either.
	deny, sh := a.gate("shadow-deny-a", 1), a.gate("shadow-deny-b", 5)
	sh.Enforce = false
	take(t, s, call(now, 1, deny))
	expect(t, "enforce full, shadow room", take(t, s, call(now, 1, deny, sh))[0], false, []int64{1, 0}, []bool{false, true})
}

// peek: a peek (Consume false) answers what a take would decide, with the
// current counts, and takes nothing, allowed or not.
func peek(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := a.gate("peek", 3)
	expect(t, "peek on a fresh gate", take(t, s, peekOf(now, 1, g))[0], true, []int64{0}, []bool{true})
	expect(t, "peek of cost 4 on limit 3", take(t, s, peekOf(now, 4, g))[0], false, []int64{0}, []bool{false})
	take(t, s, call(now, 3, g))
	expect(t, "peek on a full gate", take(t, s, peekOf(now, 1, g))[0], false, []int64{3}, []bool{false})
	h := a.gate("peek-2", 3)
	for range 5 {
		take(t, s, peekOf(now, 1, h))
	}
	expect(t, "take after five peeks", take(t, s, call(now, 3, h))[0], true, []int64{3}, []bool{true})
}

// batchOrder: calls of one batch that share a counter are decided in the
// batch's order, each seeing the ones before it: on a limit of 3, five
// calls admit the first three, and the fourth and fifth see the full gate.
// Calls on other counters in the same batch are decided on their own.
func batchOrder(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g, other := a.gate("batch", 3), a.gate("batch-other", 10)
	reqs := make([]enforce.TakeRequest, 5)
	for i := range reqs {
		reqs[i] = call(now, 1, g)
	}
	reqs = slices.Insert(reqs, 2, call(now, 2, other))
	res := take(t, s, reqs...)
	want := []struct {
		allowed bool
		count   int64
	}{{true, 1}, {true, 2}, {true, 2}, {true, 3}, {false, 3}, {false, 3}}
	for i, w := range want {
		expect(t, fmt.Sprintf("batch call %d", i), res[i], w.allowed, []int64{w.count}, []bool{w.allowed})
	}
	if got := countOf(t, s, now, g); got != 3 {
		t.Errorf("count after the batch = %d, want 3", got)
	}
}

// concurrency: many goroutines sending many batches at once on one shared
// gate get exactly Limit admissions, and every call's second, private gate
// counts exactly the calls of its goroutine that were admitted.
func concurrency(t *testing.T, s enforce.CounterStore, a algorithm) {
	const (
		workers = 16
		batches = 8
		perB    = 4
		limit   = 100 // below workers*batches*perB = 512
	)
	now := a.start()
	shared := a.gate("conc-shared", limit)
	admitted := make([]int64, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		own := a.gate(fmt.Sprintf("conc-own-%02d", w), 1_000_000)
		wg.Go(func() {
			for range batches {
				reqs := make([]enforce.TakeRequest, perB)
				for i := range reqs {
					reqs[i] = call(now, 1, shared, own)
				}
				res, err := s.Take(context.Background(), reqs, time.Now().Add(hangBound))
				if err != nil {
					errs <- err
					return
				}
				for _, r := range res {
					if r.Allowed {
						admitted[w]++
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Take: %v", err)
	}
	var total int64
	for w, n := range admitted {
		total += n
		if got := countOf(t, s, now, a.gate(fmt.Sprintf("conc-own-%02d", w), 1_000_000)); got != n {
			t.Errorf("worker %d: %d calls admitted but its own gate counts %d", w, n, got)
		}
	}
	if total != limit {
		t.Errorf("%d calls admitted on a shared gate of limit %d", total, limit)
	}
	if got := countOf(t, s, now, shared); got != limit {
		t.Errorf("shared gate counts %d, want %d", got, limit)
	}
}

// keyBytes: keys are opaque bytes: NUL, invalid UTF-8, '|' and ':' (the
// separators of enforce's keys), long keys and keys that differ only in
// such bytes are stored and counted apart.
func keyBytes(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	keys := []string{
		"k", "k\x00", "k\x00x", "\x00", "k|x", "k||x", "k:x", "k\xff", "k\xc3", "k\xc3\xa9", "k%00", `k\x00`,
		"K", "k ", strings.Repeat("long", 256),
	}
	for i, k := range keys {
		g := a.gate(k, 100)
		res := take(t, s, call(now, int64(i+1), g))[0]
		expect(t, fmt.Sprintf("key %q", k), res, true, []int64{int64(i + 1)}, []bool{true})
	}
	for i, k := range keys {
		if got := countOf(t, s, now, a.gate(k, 100)); got != int64(i+1) {
			t.Errorf("key %q counts %d, want %d: keys are not kept apart", k, got, i+1)
		}
	}
}

// pastDeadline: a Take whose deadline has already passed either answers
// (a store may be that fast) or fails with an error wrapping
// enforce.ErrTimedOut, having taken nothing.
func pastDeadline(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := a.gate("deadline", 10)
	res, err := s.Take(context.Background(), []enforce.TakeRequest{call(now, 3, g)}, time.Now().Add(-time.Second))
	if err == nil {
		if len(res) != 1 || len(res[0].States) != 1 || used(g, res[0].States[0], now) != 3 {
			t.Fatalf("Take past its deadline answered %+v, want either ErrTimedOut or the normal answer", res)
		}
		t.Log("the store answered a Take whose deadline had passed (allowed: it answered in time for itself)")
		return
	}
	if !errors.Is(err, enforce.ErrTimedOut) {
		t.Errorf("Take past its deadline: %v, want an error wrapping enforce.ErrTimedOut", err)
	}
	if got := countOf(t, s, now, g); got != 0 {
		t.Errorf("a Take that timed out took %d", got)
	}
}

// emptyBatch: a batch of no calls, and a call of no gates, are answered
// without error (a call with no gates is allowed).
func emptyBatch(t *testing.T, s enforce.CounterStore, a algorithm) {
	res, err := s.Take(context.Background(), nil, time.Now().Add(hangBound))
	if err != nil || len(res) != 0 {
		t.Errorf("empty batch: %v, %v; want no results and no error", res, err)
	}
	got := take(t, s, enforce.TakeRequest{Cost: 1, Consume: true, Now: a.start()})[0]
	if !got.Allowed {
		t.Errorf("a call with no gates was denied: %+v", got)
	}
}

// fixedWindowRollsOver: a full fixed window denies until its epoch-aligned
// end, to the last nanosecond, and admits from its first instant on: the
// window is floor(now / Window), not a period starting at the first call.
func fixedWindowRollsOver(t *testing.T, s enforce.CounterStore, a algorithm) {
	start := windowStart(time.Hour) // a minute boundary
	g := a.gate("roll", 2)
	mid := start.Add(40 * time.Second)
	take(t, s, call(mid, 2, g)) // filled 40 s into the window
	expect(t, "last instant of the window", take(t, s, call(start.Add(time.Minute-time.Nanosecond), 1, g))[0],
		false, []int64{2}, []bool{false})
	// 20 s after it was filled, not 60: the window is aligned, not sliding.
	expect(t, "first instant of the next window", take(t, s, call(start.Add(time.Minute), 1, g))[0],
		true, []int64{1}, []bool{true})
	expect(t, "next window, second call", take(t, s, call(start.Add(time.Minute+59*time.Second), 1, g))[0],
		true, []int64{2}, []bool{true})
	expect(t, "next window, third call", take(t, s, call(start.Add(time.Minute+59*time.Second), 1, g))[0],
		false, []int64{2}, []bool{false})
	// A window of another length on another key rolls at its own boundary.
	h := a.gate("roll-10s", 1)
	h.Window = 10 * time.Second
	expect(t, "10 s window", take(t, s, call(start.Add(9*time.Second), 1, h))[0], true, []int64{1}, []bool{true})
	expect(t, "10 s window, full", take(t, s, call(start.Add(9*time.Second+999*time.Millisecond), 1, h))[0],
		false, []int64{1}, []bool{false})
	expect(t, "10 s window, next", take(t, s, call(start.Add(10*time.Second), 1, h))[0], true, []int64{1}, []bool{true})
}

// fixedWindowFreshStart: a window several windows later starts from zero,
// and a peek into the next window sees zero while the current one is
// full.
func fixedWindowFreshStart(t *testing.T, s enforce.CounterStore, a algorithm) {
	start := windowStart(time.Hour)
	g := a.gate("fresh", 3)
	take(t, s, call(start, 3, g))
	expect(t, "peek into the next window", take(t, s, peekOf(start.Add(time.Minute), 1, g))[0], true, []int64{0}, []bool{true})
	expect(t, "five windows later", take(t, s, call(start.Add(5*time.Minute+time.Second), 3, g))[0], true, []int64{3}, []bool{true})
}

// fixedWindowSweep: Sweep never removes a live window (its count is
// intact after a sweep at any instant inside it, including its last), and
// once the windows have long ended it removes them: each ended counter is
// removed once (a store whose counters expire on their own reports 0).
func fixedWindowSweep(t *testing.T, s enforce.CounterStore, a algorithm) {
	ctx := context.Background()
	start := windowStart(time.Hour)
	old := []enforce.CounterGate{a.gate("sweep-a", 10), a.gate("sweep-b", 10), a.gate("sweep-c\x00", 10)}
	for _, g := range old {
		take(t, s, call(start, 4, g))
	}
	for _, at := range []time.Time{start, start.Add(30 * time.Second), start.Add(time.Minute - time.Nanosecond)} {
		n, err := s.Sweep(ctx, at)
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if n != 0 {
			t.Errorf("Sweep at %v (inside the window) removed %d counters", at.Sub(start), n)
		}
		for _, g := range old {
			if got := countOf(t, s, at, g); got != 4 {
				t.Errorf("after a Sweep inside the window, %q counts %d, want 4", g.Key, got)
			}
		}
	}
	// Much later, with one counter live in its own window.
	later := start.Add(10 * time.Minute)
	live := a.gate("sweep-live", 10)
	take(t, s, call(later, 2, live))
	n, err := s.Sweep(ctx, later.Add(30*time.Second))
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != 0 && n != int64(len(old)) {
		t.Errorf("Sweep of %d long-ended counters removed %d", len(old), n)
	}
	if n == 0 {
		t.Log("Sweep removed nothing: the store's counters expire on their own")
	}
	if got := countOf(t, s, later.Add(30*time.Second), live); got != 2 {
		t.Errorf("the live counter counts %d after Sweep, want 2", got)
	}
	if n, err := s.Sweep(ctx, later.Add(30*time.Second)); err != nil || n != 0 {
		t.Errorf("second Sweep removed %d (%v), want 0: nothing is removed twice", n, err)
	}
}
