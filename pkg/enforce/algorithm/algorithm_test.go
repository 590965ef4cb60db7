package algorithm_test

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// t0 is a fixed clock: a whole minute (and so a whole 10 s window).
var t0 = time.Unix(1_767_225_600, 0)

// ceilSeconds is how headers round a wait: whole seconds, up.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// bucket decides calls on one gate, keeping its state as a store would:
// the taken state only when the call had room and consumes.
type bucket struct {
	g algorithm.Gate
	s algorithm.State
}

func (b *bucket) take(now time.Time, cost int64) bool {
	room, next := algorithm.Decide(b.g, b.s, now, cost)
	if room {
		b.s = next
	}
	return room
}

// The reference's defaults for one class: 120 a minute, burst 30 (T is
// exactly 0.5 s).
func refBucket() *bucket {
	return &bucket{g: algorithm.Gate{Algorithm: string(algorithm.TokenBucket), Window: time.Minute, Limit: 120, Burst: 30}}
}

func TestTokenBucketStartsFull(t *testing.T) {
	b := refBucket()
	r, reset := algorithm.Describe(b.g, b.s, t0)
	if r != 30 || reset != 0 {
		t.Errorf("new bucket: r=%d reset=%v, want r=30 reset=0 (full)", r, reset)
	}
}

// Exactly burst calls pass at a frozen clock, then every call is denied
// with Retry-After = ceil(60 / per_minute) = 1 s (the missing token takes
// 0.5 s), and the headers after one call are r=29, t=1.
func TestTokenBucketBurstThenDeny(t *testing.T) {
	b := refBucket()
	if !b.take(t0, 1) {
		t.Fatal("first call denied")
	}
	if r, reset := algorithm.Describe(b.g, b.s, t0); r != 29 || ceilSeconds(reset) != 1 || reset != 500*time.Millisecond {
		t.Errorf("after one call: r=%d reset=%v, want r=29 reset=500ms (t=1)", r, reset)
	}
	for i := 2; i <= 30; i++ {
		if !b.take(t0, 1) {
			t.Fatalf("call %d of burst 30 denied", i)
		}
	}
	for i := 0; i < 3; i++ {
		if b.take(t0, 1) {
			t.Fatalf("call %d past the burst allowed", 31+i)
		}
	}
	r, reset := algorithm.Describe(b.g, b.s, t0)
	if r != 0 || reset != 15*time.Second {
		t.Errorf("empty bucket: r=%d reset=%v, want r=0 reset=15s", r, reset)
	}
	if got := algorithm.RetryAfter(b.g, b.s, t0, 1); got != 500*time.Millisecond || ceilSeconds(got) != 1 {
		t.Errorf("RetryAfter = %v, want 500ms (Retry-After 1)", got)
	}
	if got := algorithm.RetryAfter(b.g, b.s, t0, 4); got != 2*time.Second {
		t.Errorf("RetryAfter of cost 4 = %v, want 2s (four tokens of 0.5 s)", got)
	}
	// The call passes at exactly that moment, not a nanosecond before.
	if b.take(t0.Add(500*time.Millisecond-1), 1) {
		t.Error("allowed a nanosecond before the token was due")
	}
	if !b.take(t0.Add(500*time.Millisecond), 1) {
		t.Error("denied when the token was due")
	}
}

// Tokens drip in at rate = limit / window; r is the whole tokens, t the
// seconds until full, rounded up; a cost that does not fit takes nothing
// and waits exactly for its missing tokens.
func TestTokenBucketRefill(t *testing.T) {
	b := refBucket()
	for range 30 {
		b.take(t0, 1)
	}
	now := t0.Add(1200 * time.Millisecond) // 2.4 tokens back
	r, reset := algorithm.Describe(b.g, b.s, now)
	if r != 2 || reset != 13800*time.Millisecond || ceilSeconds(reset) != 14 {
		t.Errorf("after 1.2 s: r=%d reset=%v, want r=2 reset=13.8s (t=14)", r, reset)
	}
	if b.take(now, 3) {
		t.Fatal("cost 3 with 2.4 tokens allowed")
	}
	if got := algorithm.RetryAfter(b.g, b.s, now, 3); got != 300*time.Millisecond {
		t.Errorf("RetryAfter of cost 3 with 2.4 tokens = %v, want 300ms (0.6 tokens)", got)
	}
	if !b.take(now, 2) {
		t.Fatal("cost 2 with 2.4 tokens denied")
	}
	if r, _ := algorithm.Describe(b.g, b.s, now); r != 0 {
		t.Errorf("after cost 2: r=%d, want 0 (0.4 tokens)", r)
	}
	if !b.take(now.Add(300*time.Millisecond), 1) {
		t.Error("denied once the 0.6 missing tokens had dripped in")
	}
}

// However long a bucket idles it holds at most its burst.
func TestTokenBucketNeverAboveBurst(t *testing.T) {
	b := refBucket()
	b.take(t0, 5)
	later := t0.Add(24 * time.Hour)
	if r, reset := algorithm.Describe(b.g, b.s, later); r != 30 || reset != 0 {
		t.Errorf("after a day idle: r=%d reset=%v, want r=30 reset=0", r, reset)
	}
	n := 0
	for b.take(later, 1) {
		n++
	}
	if n != 30 {
		t.Errorf("after a day idle %d calls passed at one instant, want the burst, 30", n)
	}
	if room, _ := algorithm.Decide(b.g, algorithm.State{}, t0, 31); room {
		t.Error("a cost above the burst fits a full bucket")
	}
	if got := algorithm.RetryAfter(b.g, algorithm.State{}, t0, 31); got <= 0 {
		t.Errorf("RetryAfter of a cost above the burst = %v, want a positive wait", got)
	}
}

// Burst 0 means the limit; an emission interval that does not divide the
// window is rounded up (never more than the limit per window); a limit
// below 1 never has room.
func TestTokenBucketEdges(t *testing.T) {
	g := algorithm.Gate{Algorithm: string(algorithm.TokenBucket), Window: 10 * time.Second, Limit: 3}
	if T := algorithm.Interval(g.Window, g.Limit); T != 3_333_333_334 {
		t.Errorf("T = %d, want ceil(1e10/3) = 3333333334", T)
	}
	if tau := algorithm.Tau(g.Window, g.Limit, 0); tau != 3*3_333_333_334 {
		t.Errorf("tau with burst 0 = %d, want 3 T", tau)
	}
	b := &bucket{g: g}
	for i := range 3 {
		if !b.take(t0, 1) {
			t.Fatalf("call %d of 3 denied", i+1)
		}
	}
	if b.take(t0.Add(3_333_333_333), 1) {
		t.Error("a token came back before T had passed")
	}
	if !b.take(t0.Add(3_333_333_334), 1) {
		t.Error("no token back after T")
	}
	zero := algorithm.Gate{Algorithm: string(algorithm.TokenBucket), Window: time.Minute}
	if room, _ := algorithm.Decide(zero, algorithm.State{}, t0, 1); room {
		t.Error("a limit of 0 admitted a call")
	}
	if tau := algorithm.Tau(24*time.Hour, 1, 1_000_000_000); tau != algorithm.MaxTau {
		t.Errorf("tau of a huge burst = %d, want MaxTau", tau)
	}
	huge := algorithm.Gate{Algorithm: string(algorithm.TokenBucket), Window: 24 * time.Hour, Limit: 1, Burst: 1_000_000_000}
	if room, next := algorithm.Decide(huge, algorithm.State{}, t0, 1000); !room || next.TAT != t0.Add(1000*24*time.Hour) {
		t.Errorf("capped bucket: room %v TAT %v", room, next.TAT)
	}
	if room, _ := algorithm.Decide(huge, algorithm.State{}, t0, 1<<62); room {
		t.Error("a cost whose time overflows fit")
	}
}

// The GCRA decides exactly as the reference's token counter (tokens =
// min(B, tokens + elapsed*R); a call of cost n needs n whole tokens),
// computed here with exact rationals, over random calls, for rates whose
// emission interval is a whole number of nanoseconds.
func TestTokenBucketMatchesTokenModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		window       time.Duration
		limit, burst int64
	}{{time.Minute, 120, 30}, {time.Second, 10, 1}, {time.Hour, 3600, 7200}, {10 * time.Second, 5, 5}} {
		g := algorithm.Gate{Algorithm: string(algorithm.TokenBucket), Window: c.window, Limit: c.limit, Burst: c.burst}
		b := &bucket{g: g}
		rate := big.NewRat(c.limit, int64(c.window)) // tokens per ns
		tokens := big.NewRat(c.burst, 1)
		last := t0
		now := t0
		for i := range 5000 {
			now = now.Add(time.Duration(rng.Int64N(int64(c.window) / c.limit * 2)))
			cost := 1 + rng.Int64N(3)
			elapsed := new(big.Rat).Mul(big.NewRat(int64(now.Sub(last)), 1), rate)
			tokens.Add(tokens, elapsed)
			if tokens.Cmp(big.NewRat(c.burst, 1)) > 0 {
				tokens.SetInt64(c.burst)
			}
			last = now
			want := tokens.Cmp(big.NewRat(cost, 1)) >= 0
			if want {
				tokens.Sub(tokens, big.NewRat(cost, 1))
			}
			r, _ := algorithm.Describe(g, b.s, now)
			whole := new(big.Int).Quo(tokens.Num(), tokens.Denom()).Int64()
			if want {
				whole += cost // Describe is read before the take
			}
			if got := b.take(now, cost); got != want {
				t.Fatalf("%v: call %d (cost %d): GCRA room %v, token model %v", c, i, cost, got, want)
			}
			if r != whole {
				t.Fatalf("%v: call %d: r=%d, token model floor(tokens)=%d", c, i, r, whole)
			}
		}
	}
}

func TestFixedWindow(t *testing.T) {
	g := algorithm.Gate{Window: 10 * time.Second, Limit: 3}
	b := &bucket{g: g}
	now := t0.Add(4 * time.Second)
	for i := range 3 {
		if !b.take(now, 1) {
			t.Fatalf("call %d of 3 denied", i+1)
		}
	}
	if b.take(now, 1) {
		t.Error("call 4 of 3 allowed")
	}
	if r, reset := algorithm.Describe(g, b.s, now); r != 0 || reset != 6*time.Second {
		t.Errorf("full window: r=%d reset=%v, want 0 and 6s", r, reset)
	}
	if got := algorithm.RetryAfter(g, b.s, now, 1); got != 6*time.Second {
		t.Errorf("RetryAfter = %v, want 6s (the window's end)", got)
	}
	if room, _ := algorithm.Decide(g, algorithm.State{Count: 1}, now, 3); room {
		t.Error("cost 3 with 2 left fits")
	}
	if room, _ := algorithm.Decide(g, algorithm.State{}, now, 1<<62); room {
		t.Error("a huge cost fits")
	}
	if idx := algorithm.WindowIndex(time.Unix(-1, 0), 10*time.Second); idx != -1 {
		t.Errorf("window of 1 s before the epoch = %d, want -1", idx)
	}
}

// sliding is a sliding-window gate kept as a store keeps it: a count per
// window index.
type sliding struct {
	g      algorithm.Gate
	counts map[int64]int64
}

func newSliding(window time.Duration, limit int64) *sliding {
	return &sliding{g: algorithm.Gate{Algorithm: string(algorithm.SlidingWindow), Window: window, Limit: limit},
		counts: map[int64]int64{}}
}

func (s *sliding) state(now time.Time) algorithm.State {
	idx := algorithm.WindowIndex(now, s.g.Window)
	return algorithm.State{Count: s.counts[idx], Previous: s.counts[idx-1]}
}

func (s *sliding) take(now time.Time, cost int64) bool {
	room, next := algorithm.Decide(s.g, s.state(now), now, cost)
	if room {
		s.counts[algorithm.WindowIndex(now, s.g.Window)] = next.Count
	}
	return room
}

// The case: 3 per 10 s let 6 calls through in about a second on
// the fixed window (3 at the end of one window, 3 at the start of the
// next). The sliding window admits the next call only once 10/3 s of the
// new window have passed: prev*(W-e) + (cur+1)*W <= limit*W.
func TestSlidingWindowAcrossBoundary(t *testing.T) {
	s := newSliding(10*time.Second, 3)
	end := t0.Add(9500 * time.Millisecond)
	for i := range 3 {
		if !s.take(end, 1) {
			t.Fatalf("call %d of 3 denied", i+1)
		}
	}
	next := t0.Add(10 * time.Second)
	for _, e := range []time.Duration{0, 500 * time.Millisecond, 3333 * time.Millisecond} {
		if s.take(next.Add(e), 1) {
			t.Errorf("allowed %v into the next window: 3*(10000-e)+10000 > 30000", e)
		}
	}
	st := s.state(next.Add(500 * time.Millisecond))
	if got := algorithm.RetryAfter(s.g, st, next.Add(500*time.Millisecond), 1); got != 2834*time.Millisecond {
		t.Errorf("RetryAfter 0.5 s into the window = %v, want 2.834s (e = 3334 ms)", got)
	}
	if r, reset := algorithm.Describe(s.g, st, next.Add(500*time.Millisecond)); r != 0 || reset != 9500*time.Millisecond {
		t.Errorf("Describe: r=%d reset=%v, want r=0 and reset 9.5s (the previous window's weight ends with this window)", r, reset)
	}
	if !s.take(next.Add(3334*time.Millisecond), 1) {
		t.Error("denied at e = 3334 ms")
	}
	if s.take(next.Add(3334*time.Millisecond), 1) {
		t.Error("a second call at e = 3334 ms allowed")
	}
	if !s.take(next.Add(6667*time.Millisecond), 1) {
		t.Error("denied at e = 6667 ms")
	}
	st = s.state(next.Add(7 * time.Second))
	if r, reset := algorithm.Describe(s.g, st, next.Add(7*time.Second)); r != 0 || reset != 13*time.Second {
		t.Errorf("Describe at 7 s: r=%d reset=%v, want r=0 (0.9+2 of 3) and 13s (to the end of the next window)", r, reset)
	}
	// In the next window the current one's 2 calls weigh in.
	st = s.state(next.Add(10 * time.Second))
	if got := algorithm.RetryAfter(s.g, st, next.Add(10*time.Second), 2); got != 5*time.Second {
		t.Errorf("RetryAfter of cost 2 with 2 previous = %v, want 5s: 2*(W-e) <= 1*W at e = W/2", got)
	}
	if r, _ := algorithm.Describe(s.g, st, next.Add(10*time.Second)); r != 1 {
		t.Errorf("r at the boundary = %d, want 1", r)
	}
}

func TestSlidingWindowEdges(t *testing.T) {
	s := newSliding(10*time.Second, 3)
	if s.take(t0, 4) {
		t.Error("a cost above the limit fits")
	}
	if got := algorithm.RetryAfter(s.g, algorithm.State{}, t0.Add(time.Second), 4); got != 19*time.Second {
		t.Errorf("RetryAfter of a cost that never fits = %v, want 19s (until two windows on)", got)
	}
	if r, reset := algorithm.Describe(s.g, algorithm.State{}, t0); r != 3 || reset != 0 {
		t.Errorf("empty: r=%d reset=%v, want 3 and 0", r, reset)
	}
	if room, _ := algorithm.Decide(algorithm.Gate{Algorithm: string(algorithm.SlidingWindow), Window: time.Second}, algorithm.State{}, t0, 1); room {
		t.Error("a limit of 0 admitted a call")
	}
	// A window never admits more than the limit, whatever came before.
	s = newSliding(10*time.Second, 5)
	n := 0
	for ms := 0; ms < 10_000; ms++ {
		if s.take(t0.Add(time.Duration(ms)*time.Millisecond), 1) {
			n++
		}
	}
	if n != 5 {
		t.Errorf("one window admitted %d, want 5", n)
	}
}

// maxInWindow is the most admitted calls (times in ns, sorted) in any
// interval (t - w, t].
func maxInWindow(admitted []int64, w int64) int64 {
	var best int64
	lo := 0
	for hi, t := range admitted {
		for admitted[lo] <= t-w {
			lo++
		}
		best = max(best, int64(hi-lo+1))
	}
	return best
}

// bound is the sliding window's stated worst case for any interval of
// length W: limit + floor(limit*(W_ms-1)/W_ms).
func bound(limit int64, window time.Duration) int64 {
	w := window.Milliseconds()
	return limit + limit*(w-1)/w
}

// TestSlidingWindowBound drives the sliding window with arrival patterns
// (steady, random, bursts at window ends, and the adversary's) and checks
// no interval of length W ever holds more than the bound, while the fixed
// window, on the same arrivals, reaches 2*limit on the boundary bursts.
func TestSlidingWindowBound(t *testing.T) {
	const window = 10 * time.Second
	w := int64(window)
	patterns := map[string]func(rng *rand.Rand) []int64{
		"steady, 4 times the rate": func(*rand.Rand) []int64 {
			var ts []int64
			for i := int64(0); i < 400; i++ {
				ts = append(ts, i*w/40)
			}
			return ts
		},
		"random": func(rng *rand.Rand) []int64 {
			var ts []int64
			at := int64(0)
			for range 2000 {
				at += rng.Int64N(w / 50)
				ts = append(ts, at)
			}
			return ts
		},
		"one burst at a window's end, another in the next one's first second": func(*rand.Rand) []int64 {
			var ts []int64
			for i := int64(0); i < 30; i++ {
				ts = append(ts, 2*w-int64(time.Millisecond)+i)
			}
			for at := 2 * w; at < 2*w+int64(time.Second); at += int64(time.Millisecond) {
				ts = append(ts, at)
			}
			return ts
		},
		"bursts at every window end and start": func(*rand.Rand) []int64 {
			var ts []int64
			for k := int64(1); k <= 20; k++ {
				for i := int64(0); i < 30; i++ {
					ts = append(ts, k*w-int64(time.Millisecond)+i, k*w+i*int64(time.Millisecond))
				}
			}
			return ts
		},
		"the adversary: the last millisecond, then as fast as admitted": func(*rand.Rand) []int64 {
			var ts []int64
			for i := int64(0); i < 50; i++ {
				ts = append(ts, w-int64(time.Millisecond)+i)
			}
			for at := w; at < 3*w; at += int64(time.Millisecond) {
				ts = append(ts, at)
			}
			return ts
		},
	}
	for _, limit := range []int64{1, 3, 10, 25} {
		for name, gen := range patterns {
			arrivals := gen(rand.New(rand.NewPCG(uint64(limit), 7)))
			s := newSliding(window, limit)
			fixed := &bucket{g: algorithm.Gate{Window: window, Limit: limit}}
			fixedCounts := map[int64]int64{}
			var admitted, fixedAdmitted []int64
			for _, at := range arrivals {
				now := t0.Add(time.Duration(at))
				if s.take(now, 1) {
					admitted = append(admitted, now.UnixNano())
				}
				idx := algorithm.WindowIndex(now, window)
				fixed.s = algorithm.State{Count: fixedCounts[idx]}
				if fixed.take(now, 1) {
					fixedCounts[idx] = fixed.s.Count
					fixedAdmitted = append(fixedAdmitted, now.UnixNano())
				}
			}
			got := maxInWindow(admitted, w)
			if got > bound(limit, window) {
				t.Errorf("limit %d, %s: %d calls in one interval of 10 s, above the bound %d", limit, name, got, bound(limit, window))
			}
			if strings.Contains(name, "burst") {
				if f := maxInWindow(fixedAdmitted, w); f != 2*limit {
					t.Errorf("limit %d, %s: the fixed window admitted %d in 10 s, want 2*limit (the case the sliding window is for)", limit, name, f)
				}
			}
			if strings.HasPrefix(name, "one burst") && got > limit+limit/10 {
				// After a full window, the first second (a tenth) of the
				// next frees a tenth of the limit.
				t.Errorf("limit %d, %s: the sliding window admitted %d in 10 s, want at most limit + limit/10 = %d", limit, name, got, limit+limit/10)
			}
			if name == "steady, 4 times the rate" && got > limit+1 {
				t.Errorf("limit %d, steady traffic: %d in 10 s, want at most limit+1", limit, got)
			}
		}
	}
}

// TestSlidingWindowBoundIsTight: the adversary reaches the stated bound
// exactly (it is the worst case, not a loose estimate): the limit in the
// last nanoseconds of one window, then a call every millisecond of the
// next; the interval ending at its last millisecond holds both.
func TestSlidingWindowBoundIsTight(t *testing.T) {
	const window = 10 * time.Second
	w := int64(window)
	for _, limit := range []int64{1, 3, 10, 25} {
		s := newSliding(window, limit)
		var admitted []int64
		for i := int64(0); i < limit; i++ {
			at := t0.Add(time.Duration(w - 1000 + i)) // the last microsecond
			if s.take(at, 1) {
				admitted = append(admitted, at.UnixNano())
			}
		}
		for at := w; at < 2*w; at += int64(time.Millisecond) {
			now := t0.Add(time.Duration(at))
			if s.take(now, 1) {
				admitted = append(admitted, now.UnixNano())
			}
		}
		if got, want := maxInWindow(admitted, w), bound(limit, window); got != want {
			t.Errorf("limit %d: the adversary got %d in one interval of 10 s, the bound is %d", limit, got, want)
		}
	}
}
