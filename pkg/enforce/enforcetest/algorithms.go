package enforcetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	calc "github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// The checks of the sliding window and the token bucket, and of gates of
// different algorithms mixed in one call. Every value is exact at a
// controlled clock: a store that counts these algorithms decides as
// pkg/enforce/algorithm does, to the nanosecond (token bucket) and the
// millisecond (sliding window).

// arith is g as pkg/enforce/algorithm sees it.
func arith(g enforce.CounterGate) calc.Gate {
	return calc.Gate{Algorithm: string(g.Algorithm), Window: g.Window, Limit: g.Limit, Burst: g.Burst}
}

func stateOf(st enforce.GateState) calc.State {
	return calc.State{Count: st.Count, Previous: st.Previous, TAT: st.TAT}
}

// maxInWindow is the most times (sorted) in any interval (t - w, t].
func maxInWindow(times []time.Time, w time.Duration) int {
	best, lo := 0, 0
	for hi, t := range times {
		for !times[lo].After(t.Add(-w)) {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// slidingAcrossBoundary is the case: 3 per 10 s, three calls at
// the end of one window, then a call every 100 ms. The fixed window
// admits three more at once (six within a second); the sliding window
// none in the new window's first 3.333 s (prev*(W-e) + (cur+1)*W <=
// limit*W needs e >= 3334 ms), and no interval of 10 s ever holds more
// than pkg/enforce/algorithm's bound, limit + floor(limit*(W_ms-1)/W_ms).
func slidingAcrossBoundary(t *testing.T, s enforce.CounterStore, a algorithm) {
	start := windowStart(time.Hour)
	sw := a.gate("boundary-sliding", 3)
	sw.Window = 10 * time.Second
	fw := sw
	fw.Key, fw.Algorithm = "boundary-fixed", enforce.AlgorithmFixedWindow
	end := start.Add(9500 * time.Millisecond)
	var slid, fixed []time.Time
	for i := range 3 {
		if r := take(t, s, call(end, 1, sw), call(end, 1, fw)); !r[0].Allowed || !r[1].Allowed {
			t.Fatalf("call %d of 3 at the window's end denied: sliding %v, fixed %v", i+1, r[0].Allowed, r[1].Allowed)
		}
		slid, fixed = append(slid, end), append(fixed, end)
	}
	next := start.Add(10 * time.Second)
	for at := next; at.Before(next.Add(20 * time.Second)); at = at.Add(100 * time.Millisecond) {
		r := take(t, s, call(at, 1, sw), call(at, 1, fw))
		if r[0].Allowed {
			slid = append(slid, at)
		}
		if r[1].Allowed {
			fixed = append(fixed, at)
		}
	}
	if got := maxInWindow(fixed, time.Second+500*time.Millisecond); got != 6 {
		t.Errorf("the fixed window admitted %d within 1.5 s across the boundary, want 6 (twice the limit)", got)
	}
	if got := maxInWindow(slid, time.Second+500*time.Millisecond); got != 3 {
		t.Errorf("the sliding window admitted %d within 1.5 s across the boundary, want 3 (the limit)", got)
	}
	bound := 3 + 3*(10_000-1)/10_000
	if got := maxInWindow(slid, sw.Window); got > bound {
		t.Errorf("the sliding window admitted %d within one window of 10 s, above its bound %d", got, bound)
	}
	if got := maxInWindow(fixed, sw.Window); got != 6 {
		t.Errorf("the fixed window admitted %d within 10 s, want 6", got)
	}
	// To the millisecond, on a fresh key.
	g := a.gate("boundary-exact", 3)
	g.Window = 10 * time.Second
	take(t, s, call(end, 3, g))
	expect(t, "3333 ms into the next window", take(t, s, call(next.Add(3333*time.Millisecond), 1, g))[0],
		false, []int64{0}, []bool{false})
	r := take(t, s, call(next.Add(3334*time.Millisecond), 1, g))[0]
	expect(t, "3334 ms into the next window", r, true, []int64{1}, []bool{true})
	if r.States[0] != (enforce.GateState{Count: 1, Previous: 3}) {
		t.Errorf("state after the call = %+v, want Count 1, Previous 3", r.States[0])
	}
}

// slidingWeighs: limit 10 a minute, full at 50 s into a window. In the
// next window a call of cost c fits once 10*(60000-e) + (cur+c)*60000 <=
// 600000, that is e >= 6000*(cur+c) ms; the window after that weighs the
// next one's count; a window with nothing before it admits the limit at
// once. Peeks report the previous window's count.
func slidingWeighs(t *testing.T, s enforce.CounterStore, a algorithm) {
	start := windowStart(time.Hour)
	g := a.gate("weigh", 10)
	take(t, s, call(start.Add(50*time.Second), 10, g))
	next := start.Add(time.Minute)
	at := func(ms int) time.Time { return next.Add(time.Duration(ms) * time.Millisecond) }
	steps := []struct {
		ms      int
		cost    int64
		allowed bool
		count   int64
	}{{0, 1, false, 0}, {5999, 1, false, 0}, {6000, 1, true, 1}, {11_999, 1, false, 1}, {12_000, 1, true, 2},
		{18_000, 2, false, 2}, {23_999, 2, false, 2}, {24_000, 2, true, 4}}
	for _, st := range steps {
		r := take(t, s, call(at(st.ms), st.cost, g))[0]
		expect(t, fmt.Sprintf("cost %d at %d ms", st.cost, st.ms), r, st.allowed, []int64{st.count}, []bool{st.allowed})
		if r.States[0].Previous != 10 {
			t.Errorf("at %d ms: previous window's count reported %d, want 10", st.ms, r.States[0].Previous)
		}
	}
	p := take(t, s, peekOf(next.Add(time.Minute), 1, g))[0]
	if p.States[0] != (enforce.GateState{Count: 0, Previous: 4}) || !p.Allowed {
		t.Errorf("peek into the window after: %+v allowed %v, want Count 0, Previous 4, allowed", p.States[0], p.Allowed)
	}
	// 4*(60000-0) + (0+7)*60000 > 600000, and 6 fits.
	expect(t, "cost 7 with 4 weighing in whole", take(t, s, call(next.Add(time.Minute), 7, g))[0], false, []int64{0}, []bool{false})
	expect(t, "cost 6 with 4 weighing in whole", take(t, s, call(next.Add(time.Minute), 6, g))[0], true, []int64{6}, []bool{true})
	// Two windows on, nothing before: the limit at once.
	later := next.Add(3 * time.Minute)
	expect(t, "cost 10 after an empty window", take(t, s, call(later, 10, g))[0], true, []int64{10}, []bool{true})
	expect(t, "and then nothing", take(t, s, call(later, 1, g))[0], false, []int64{10}, []bool{false})
}

// slidingSweep: a sliding window's counter is still the previous window
// of the next one: no Sweep before the window after it has ended removes
// it, and long after, Sweep removes it (once; 0 for a store whose
// counters expire on their own).
func slidingSweep(t *testing.T, s enforce.CounterStore, a algorithm) {
	ctx := context.Background()
	start := windowStart(time.Hour)
	old := []enforce.CounterGate{a.gate("sweep-a", 10), a.gate("sweep-b\x00", 10)}
	for _, g := range old {
		take(t, s, call(start, 4, g))
	}
	for _, at := range []time.Duration{30 * time.Second, time.Minute, 90 * time.Second, 2*time.Minute - time.Nanosecond} {
		n, err := s.Sweep(ctx, start.Add(at))
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if n != 0 {
			t.Errorf("Sweep at %v removed %d counters that still weigh in", at, n)
		}
		if at >= time.Minute {
			for _, g := range old {
				if p := take(t, s, peekOf(start.Add(at), 1, g))[0]; p.States[0].Previous != 4 {
					t.Errorf("after a Sweep at %v, %q's previous window counts %d, want 4", at, g.Key, p.States[0].Previous)
				}
			}
		}
	}
	later := start.Add(10 * time.Minute)
	n, err := s.Sweep(ctx, later)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != 0 && n != int64(len(old)) {
		t.Errorf("Sweep of %d long-ended counters removed %d", len(old), n)
	}
	for _, g := range old {
		if p := take(t, s, peekOf(later, 1, g))[0]; p.States[0] != (enforce.GateState{}) {
			t.Errorf("long after, %q reads %+v, want an empty state", g.Key, p.States[0])
		}
	}
	if n, err := s.Sweep(ctx, later); err != nil || n != 0 {
		t.Errorf("second Sweep removed %d (%v), want 0", n, err)
	}
}

// refBucket is a typical API class: 120 a minute (one token every
// 0.5 s), burst 30.
func refBucket(a algorithm, key string) enforce.CounterGate {
	g := a.gate(key, 120)
	g.Burst = 30
	return g
}

// bucketBurstThenDeny: a new bucket is full; exactly the burst passes at
// a frozen clock, each call moving the TAT by T; then every call is
// denied, taking nothing, and the wait the state gives is the missing
// token's time (Retry-After ceil(0.5 s) = 1): the call is denied a
// nanosecond before and allowed at that moment.
func bucketBurstThenDeny(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := refBucket(a, "burst")
	p := take(t, s, peekOf(now, 1, g))[0]
	if st := p.States[0]; !p.Allowed || st.TAT.After(now) {
		t.Errorf("a new bucket: allowed %v TAT %v, want allowed and full (TAT zero or not after now)", p.Allowed, st.TAT)
	}
	for i := 1; i <= 30; i++ {
		r := take(t, s, call(now, 1, g))[0]
		want := now.Add(time.Duration(i) * 500 * time.Millisecond)
		if !r.Allowed || !r.States[0].TAT.Equal(want) {
			t.Fatalf("call %d of burst 30: allowed %v TAT %v, want allowed, TAT now+%v", i, r.Allowed, r.States[0].TAT, want.Sub(now))
		}
	}
	r := take(t, s, call(now, 1, g))[0]
	if r.Allowed || r.Room[0] || !r.States[0].TAT.Equal(now.Add(15*time.Second)) {
		t.Fatalf("call 31: allowed %v room %v TAT now+%v, want denied with the TAT unchanged (now+15s)", r.Allowed, r.Room[0], r.States[0].TAT.Sub(now))
	}
	if rem, reset := calc.Describe(arith(g), stateOf(r.States[0]), now); rem != 0 || reset != 15*time.Second {
		t.Errorf("empty bucket: r=%d reset=%v, want 0 and 15s", rem, reset)
	}
	if wait := calc.RetryAfter(arith(g), stateOf(r.States[0]), now, 1); wait != 500*time.Millisecond {
		t.Errorf("Retry-After from the state = %v, want 500ms (one token)", wait)
	}
	expect(t, "a nanosecond before the token", take(t, s, call(now.Add(500*time.Millisecond-1), 1, g))[0], false, []int64{30}, []bool{false})
	r = take(t, s, call(now.Add(500*time.Millisecond), 1, g))[0]
	if !r.Allowed || !r.States[0].TAT.Equal(now.Add(15*time.Second+500*time.Millisecond)) {
		t.Errorf("when the token is due: allowed %v TAT now+%v, want allowed, now+15.5s", r.Allowed, r.States[0].TAT.Sub(now))
	}
	// A cost of 4 on an empty bucket waits for four tokens: 2 s.
	h := refBucket(a, "burst-cost")
	take(t, s, call(now, 30, h))
	expect(t, "cost 4, 1 ns early", take(t, s, call(now.Add(2*time.Second-1), 4, h))[0], false, []int64{27}, []bool{false})
	expect(t, "cost 4 after 2 s", take(t, s, call(now.Add(2*time.Second), 4, h))[0], true, []int64{30}, []bool{true})
}

// bucketRefill: 1.2 s after emptying, 2.4 tokens are back: a cost of 3
// is denied and takes nothing, a cost of 2 passes; the 0.6 missing
// tokens of the next call drip in 0.3 s.
func bucketRefill(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := refBucket(a, "refill")
	take(t, s, call(now, 30, g))
	at := now.Add(1200 * time.Millisecond)
	p := take(t, s, peekOf(at, 1, g))[0]
	if rem, reset := calc.Describe(arith(g), stateOf(p.States[0]), at); rem != 2 || reset != 13800*time.Millisecond {
		t.Errorf("after 1.2 s: r=%d reset=%v, want r=2 (2.4 tokens) and 13.8s to full", rem, reset)
	}
	r := take(t, s, call(at, 3, g))[0]
	if r.Allowed || !r.States[0].TAT.Equal(now.Add(15*time.Second)) {
		t.Errorf("cost 3 with 2.4 tokens: allowed %v TAT now+%v, want denied, TAT now+15s", r.Allowed, r.States[0].TAT.Sub(now))
	}
	r = take(t, s, call(at, 2, g))[0]
	if !r.Allowed || !r.States[0].TAT.Equal(now.Add(16*time.Second)) {
		t.Errorf("cost 2 with 2.4 tokens: allowed %v TAT now+%v, want allowed, TAT now+16s", r.Allowed, r.States[0].TAT.Sub(now))
	}
	if wait := calc.RetryAfter(arith(g), stateOf(r.States[0]), at, 1); wait != 300*time.Millisecond {
		t.Errorf("wait for the next token = %v, want 300ms", wait)
	}
	if take(t, s, call(at.Add(300*time.Millisecond-1), 1, g))[0].Allowed {
		t.Error("allowed a nanosecond before the missing 0.6 tokens were in")
	}
	if !take(t, s, call(at.Add(300*time.Millisecond), 1, g))[0].Allowed {
		t.Error("denied once the missing 0.6 tokens were in")
	}
}

// bucketNeverAboveBurst: however long a bucket idles, it holds its burst
// and no more; a burst above or below the rate's limit is the capacity.
func bucketNeverAboveBurst(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := refBucket(a, "idle")
	take(t, s, call(now, 5, g))
	later := now.Add(24 * time.Hour)
	for i := int64(1); i <= 30; i++ {
		if r := take(t, s, call(later, 1, g))[0]; !r.Allowed {
			t.Fatalf("a day later, call %d of burst 30 denied", i)
		}
	}
	expect(t, "a day later, call 31", take(t, s, call(later, 1, g))[0], false, []int64{30}, []bool{false})
	for _, burst := range []int64{1, 25} {
		h := a.gate(fmt.Sprintf("burst-%d", burst), 10)
		h.Burst = burst
		n := int64(0)
		for take(t, s, call(now, 1, h))[0].Allowed {
			n++
			if n > 100 {
				break
			}
		}
		if n != burst {
			t.Errorf("limit 10 a minute, burst %d: %d calls passed at one instant, want %d", burst, n, burst)
		}
	}
	big := refBucket(a, "above-burst")
	expect(t, "a cost above the burst on a full bucket", take(t, s, call(now, 31, big))[0], false, []int64{0}, []bool{false})
}

// bucketDefaults: Burst 0 is the limit; T = ceil(W / limit) ns: for 3 per
// 10 s, 3333333334 ns, a token is back after T, not a nanosecond before.
func bucketDefaults(t *testing.T, s enforce.CounterStore, a algorithm) {
	now := a.start()
	g := a.gate("defaults", 3)
	g.Window, g.Burst = 10*time.Second, 0
	for i := range 3 {
		if !take(t, s, call(now, 1, g))[0].Allowed {
			t.Fatalf("call %d of 3 denied", i+1)
		}
	}
	const T = 3_333_333_334
	expect(t, "4th call at once", take(t, s, call(now, 1, g))[0], false, []int64{3}, []bool{false})
	if take(t, s, call(now.Add(T-1), 1, g))[0].Allowed {
		t.Error("a token back before T = ceil(10 s / 3)")
	}
	r := take(t, s, call(now.Add(T), 1, g))[0]
	if !r.Allowed || !r.States[0].TAT.Equal(now.Add(4*T)) {
		t.Errorf("after T: allowed %v TAT now+%d, want allowed, now+4T", r.Allowed, r.States[0].TAT.Sub(now))
	}
}

// bucketSweep: Sweep never removes a bucket that is not full (its TAT is
// intact after a Sweep up to its last nanosecond), and once it is full,
// removes it (once; 0 for a store whose counters expire on their own); a
// removed bucket reads full.
func bucketSweep(t *testing.T, s enforce.CounterStore, a algorithm) {
	ctx := context.Background()
	now := a.start()
	g := a.gate("sweep", 60) // one token a second
	g.Burst = 10
	take(t, s, call(now, 3, g))
	for _, at := range []time.Duration{0, time.Second, 3*time.Second - time.Nanosecond} {
		n, err := s.Sweep(ctx, now.Add(at))
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		if n != 0 {
			t.Errorf("Sweep %v on removed %d buckets that are not full", at, n)
		}
		if p := take(t, s, peekOf(now.Add(at), 1, g))[0]; !p.States[0].TAT.Equal(now.Add(3 * time.Second)) {
			t.Errorf("after a Sweep %v on, TAT now+%v, want now+3s", at, p.States[0].TAT.Sub(now))
		}
	}
	later := now.Add(10 * time.Minute)
	n, err := s.Sweep(ctx, later)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if n != 0 && n != 1 {
		t.Errorf("Sweep of one full bucket removed %d", n)
	}
	if p := take(t, s, peekOf(later, 1, g))[0]; p.States[0].TAT.After(later) {
		t.Errorf("a full bucket reads TAT %v, after now", p.States[0].TAT)
	}
	n = 0
	for take(t, s, call(later, 1, g))[0].Allowed {
		n++
		if n > 20 {
			break
		}
	}
	if n != 10 {
		t.Errorf("after the sweep, %d calls passed at one instant, want the burst, 10", n)
	}
	if n, err := s.Sweep(ctx, later); err != nil || n != 0 {
		t.Errorf("second Sweep removed %d (%v), want 0", n, err)
	}
}

// mixedCheck is a check over gates of several algorithms.
type mixedCheck struct {
	name string
	run  func(t *testing.T, s enforce.CounterStore, algos []enforce.Algorithm)
}

var mixed = []mixedCheck{
	{"all or nothing across gates of different algorithms", mixedAllOrNothing},
	{"shadow gates of one algorithm beside enforce gates of another", mixedShadow},
	{"one batch over mixed gates, in order", mixedBatch},
	{"exact under concurrency across algorithms", mixedConcurrency},
}

// mixedGates is one gate per algorithm, keyed prefix-<algorithm>.
func mixedGates(algos []enforce.Algorithm, prefix string, limit int64) []enforce.CounterGate {
	out := make([]enforce.CounterGate, len(algos))
	for i, name := range algos {
		out[i] = algorithms[name].gate(prefix+"-"+string(name), limit)
	}
	return out
}

func mixedStart() time.Time { return windowStart(time.Hour).Add(10 * time.Second) }

// mixedAllOrNothing: for each algorithm, a full gate of it denies a call
// whose other gates (of every algorithm) have room, and none of them is
// charged; a call whose gates all have room is charged on each.
func mixedAllOrNothing(t *testing.T, s enforce.CounterStore, algos []enforce.Algorithm) {
	now := mixedStart()
	room := mixedGates(algos, "aon-room", 10)
	for i, name := range algos {
		full := algorithms[name].gate("aon-full-"+string(name), 1)
		take(t, s, call(now, 1, full))
		gates := append([]enforce.CounterGate{full}, room...)
		r := take(t, s, call(now, 1, gates...))[0]
		if r.Allowed {
			t.Errorf("full %s gate: the call was allowed", name)
		}
		for j, g := range call(now, 1, gates...).Gates {
			if g.Key == full.Key {
				if r.Room[j] {
					t.Errorf("full %s gate reports room", name)
				}
				continue
			}
			if !r.Room[j] || r.used[j] != 0 {
				t.Errorf("full %s gate: gate %q room %v used %d, want room and nothing taken", name, g.Key, r.Room[j], r.used[j])
			}
		}
		_ = i
	}
	for _, g := range room {
		if got := countOf(t, s, now, g); got != 0 {
			t.Errorf("%q was charged %d by denied calls", g.Key, got)
		}
	}
	r := take(t, s, call(now, 2, room...))[0]
	want := make([]int64, len(room))
	rooms := make([]bool, len(room))
	for i := range want {
		want[i], rooms[i] = 2, true
	}
	expect(t, "every gate with room", r, true, want, rooms)
}

// mixedShadow: a full shadow gate of one algorithm does not deny a call
// whose enforce gate of another has room, and is not charged; an enforce
// gate that denies leaves the shadow gate uncharged.
func mixedShadow(t *testing.T, s enforce.CounterStore, algos []enforce.Algorithm) {
	now := mixedStart()
	for i, name := range algos {
		other := algos[(i+1)%len(algos)]
		shadow := algorithms[name].gate("shadow-b-"+string(name), 1)
		shadow.Enforce = false
		enf := algorithms[other].gate("shadow-a-"+string(name), 2)
		expect(t, string(name)+" shadow with room", take(t, s, call(now, 1, enf, shadow))[0], true, []int64{1, 1}, []bool{true, true})
		expect(t, string(name)+" shadow full", take(t, s, call(now, 1, enf, shadow))[0], true, []int64{2, 1}, []bool{true, false})
		expect(t, string(other)+" enforce full", take(t, s, call(now, 1, enf, shadow))[0], false, []int64{2, 1}, []bool{false, false})
	}
}

// mixedBatch: calls of one batch over gates of different algorithms see
// each other in order: the gate of limit 2 denies the third call, which
// then takes nothing from the others.
func mixedBatch(t *testing.T, s enforce.CounterStore, algos []enforce.Algorithm) {
	now := mixedStart()
	tight := algorithms[algos[0]].gate("batch-tight", 2)
	wide := mixedGates(algos[1:], "batch-wide", 3)
	gates := append([]enforce.CounterGate{tight}, wide...)
	reqs := []enforce.TakeRequest{call(now, 1, gates...), call(now, 1, gates...), call(now, 1, gates...)}
	res := take(t, s, reqs...)
	for i, want := range []bool{true, true, false} {
		if res[i].Allowed != want {
			t.Errorf("batch call %d: allowed %v, want %v", i, res[i].Allowed, want)
		}
	}
	for _, g := range wide {
		if got := countOf(t, s, now, g); got != 2 {
			t.Errorf("%q used %d after the batch, want 2", g.Key, got)
		}
	}
}

// mixedConcurrency: goroutines sending batches of calls over one shared
// gate per algorithm, the tightest of limit 50, get exactly 50 calls
// through, and every other shared gate used exactly 50.
func mixedConcurrency(t *testing.T, s enforce.CounterStore, algos []enforce.Algorithm) {
	const (
		workers = 8
		batches = 8
		perB    = 4
	)
	now := mixedStart()
	shared := mixedGates(algos, "conc", 1000)
	shared[len(shared)-1].Limit, shared[len(shared)-1].Burst = 50, 50
	var (
		mu       sync.Mutex
		admitted int
		wg       sync.WaitGroup
	)
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range batches {
				reqs := make([]enforce.TakeRequest, perB)
				for i := range reqs {
					reqs[i] = call(now, 1, shared...)
				}
				res, err := s.Take(context.Background(), reqs, time.Now().Add(hangBound))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, r := range res {
					if r.Allowed {
						admitted++
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Take: %v", err)
	}
	if admitted != 50 {
		t.Errorf("%d calls admitted, want 50 (the tightest gate's limit)", admitted)
	}
	for _, g := range shared {
		if got := countOf(t, s, now, g); got != 50 {
			t.Errorf("%q used %d, want 50", g.Key, got)
		}
	}
}
