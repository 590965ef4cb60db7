// Package algorithm is the arithmetic of rlctl's rate-limit algorithms,
// pure and in integers only, so that every counter store (Go's in-memory
// store, PostgreSQL's rl_take) decides to the unit the same way: the fixed
// window, the token bucket (as a GCRA) and the weighted sliding window.
// A store keeps the state (a count per window, or one timestamp per key)
// and calls Decide; pkg/enforce calls Describe and RetryAfter to shape
// decisions and headers. The conformance suite in pkg/enforce/enforcetest
// is what holds every store equal to this package.
//
// # Fixed window
//
// Window index idx = floor(now / W), aligned on the Unix epoch. A call of
// cost c has room iff count + c <= limit. The window's count starts at
// zero; a counter expires when its window ends.
//
// # Token bucket (GCRA)
//
// The sustained rate is limit per W, the capacity burst. The bucket is
// kept as one timestamp, the theoretical arrival time TAT (ns since the
// epoch), in the generic cell rate algorithm's terms:
//
//	T   = ceil(W_ns / limit)       emission interval: one token's worth of time
//	tau = burst * T                the bucket's depth in time
//	tat0 = max(TAT, now)
//	new  = tat0 + c*T
//	room iff new - now <= tau
//
// A consuming call that is allowed stores TAT = new; a denied one stores
// nothing. A TAT at or before now is a full bucket, so a new bucket (no
// TAT) starts full and a counter expires at its TAT: one row per key, not
// one per window. In the reference's terms (tokens, refilled at
// rate = limit / W), tokens = (tau - (tat0 - now)) / T, and the headers
// are r = floor(tokens) (Describe's remaining), t = ceil((tat0 - now) / 1 s)
// (its reset, rounded up by the caller; 0 when full), and Retry-After =
// ceil((new - tau - now) / 1 s), at least 1 (RetryAfter, rounded up by the
// caller): exactly the time the missing tokens take to drip in. tau is
// capped at MaxTau (about 146 years) so that no sum overflows int64.
//
// # Sliding window (weighted two-window counter)
//
// Positions are in milliseconds: W_ms, idx = floor(now_ms / W_ms), offset
// e = now_ms - idx*W_ms, cur = the count of window idx, prev = the count
// of window idx - 1. The previous window's count is weighted by the part
// of it still inside the sliding window (now - W, now]:
//
//	room iff prev*(W_ms - e) + (cur + c)*W_ms <= limit*W_ms
//
// which is exact in int64 for limits up to 1e9 and windows up to a day.
// A consuming allowed call adds c to cur; a counter expires two windows
// after its window starts (it is the previous window for one more
// window).
//
// Error bound. The weight assumes the previous window's calls were spread
// evenly over it. Let S = (t - W, t] be any interval of length W, idx the
// window of t and e its offset. S holds the calls of window idx up to t
// and those of window idx - 1 after offset e (call that tail). The last
// call admitted in window idx, at offset e' <= e, had prev*(W - e') +
// cur*W <= limit*W, so cur <= limit - prev*(W - e)/W, and the tail is at
// most prev. Hence
//
//	calls in S <= limit + prev*e/W <= limit + floor(limit*(W_ms - 1)/W_ms)
//
// since prev <= limit (no window ever admits more than the limit: the
// weighted term is never negative) and e <= W_ms - 1. For limits up to
// W_ms that is 2*limit - 1: in the worst case (the previous window's
// whole limit arriving in its last millisecond, then calls as fast as they
// are admitted) an interval of length W holds almost twice the limit, and
// the bound is reached (TestSlidingWindowBoundIsTight). What the weighting
// buys is that this needs the previous window's calls bunched at its very
// end: the excess over the limit in S is (tail - prev*(W - e)/W), how far
// the tail holds more than its even share, so evenly spread traffic stays
// within the limit (plus the rounding of one call), and across a boundary
// where the fixed window admits 2*limit within moments, the sliding
// window admits only what the elapsed part of the new window frees: after
// a full previous window, c more calls need e >= c*W/limit.
package algorithm

import (
	"math"
	"time"
)

// Name names how a gate counts, as ratelimit's definitions name it. A new
// algorithm is a new value here plus one implementation in every counter
// store (and a case in the conformance suite), not a branch in every
// package. pkg/enforce calls it Algorithm (an alias), and counter keys
// carry it (pkg/enforce/counterkey), which is why it lives below both.
type Name string

// The algorithms. An empty name is FixedWindow.
const (
	// FixedWindow counts calls per window of the gate's length aligned on
	// the Unix epoch: window index floor(now / Window). It is the default:
	// a gate with an empty name is a fixed window.
	FixedWindow Name = "fixed_window"
	// SlidingWindow is the weighted two-window counter: the previous fixed
	// window's count, weighted by the part of it still inside the sliding
	// window of length Window, plus the current one (the bound is stated
	// above).
	SlidingWindow Name = "sliding_window"
	// TokenBucket is a token bucket of capacity Burst refilled at Limit per
	// Window, kept as a GCRA theoretical arrival time (one timestamp per
	// key). A new bucket starts full.
	TokenBucket Name = "token_bucket"
)

// MaxTau caps a token bucket's depth in time (ns): tau = min(burst*T,
// MaxTau). No limit a definition can hold comes near it (a burst of 1e9
// on a rate of one per day would).
const MaxTau = int64(1) << 62

// Gate is what the arithmetic needs of one gate.
type Gate struct {
	// Algorithm is a Name's string: FixedWindow (or ""), SlidingWindow
	// or TokenBucket.
	Algorithm string
	// Window is the window length (the token bucket's rate is Limit per
	// Window). Positive; the stores require whole seconds.
	Window time.Duration
	// Limit is what the gate admits per Window.
	Limit int64
	// Burst is the token bucket's capacity (0: Limit).
	Burst int64
}

// State is a gate's counter, as the store read it for the decision's
// instant (pkg/enforce.GateState has the same fields).
type State struct {
	// Count is the count of the window now is in (fixed and sliding).
	Count int64
	// Previous is the count of the window before it (sliding).
	Previous int64
	// TAT is the token bucket's theoretical arrival time; zero or not
	// after now is a full bucket.
	TAT time.Time
}

// Decide says whether a call of cost (>= 1) at now has room on g given s,
// and the state the counter has once the call is taken (meaningful only
// when room: a store writes it only if every enforce gate of the call had
// room and the call consumes). A gate whose limit is below 1 never has
// room.
func Decide(g Gate, s State, now time.Time, cost int64) (room bool, taken State) {
	taken = s
	switch Name(g.Algorithm) {
	case TokenBucket:
		T, tau := Interval(g.Window, g.Limit), Tau(g.Window, g.Limit, g.Burst)
		var newTAT int64
		room, newTAT = GCRA(tatNanos(s.TAT), now.UnixNano(), cost, T, tau)
		if room {
			taken.TAT = time.Unix(0, newTAT)
		}
	case SlidingWindow:
		wMs := g.Window.Milliseconds()
		room = SlidingRoom(s.Previous, s.Count, cost, g.Limit, wMs, Offset(now, g.Window))
		if room {
			taken.Count += cost
		}
	default:
		room = FixedRoom(s.Count, cost, g.Limit)
		if room {
			taken.Count += cost
		}
	}
	return room, taken
}

// Describe is what is left on g after a decision that left it in s, at
// now: remaining whole units (calls of cost 1) that would pass now, and
// how long until the gate is back to its full limit (0 when it is full).
//
//   - fixed window: limit - count, and the time to the window's end;
//   - token bucket: floor(tokens), and the time until the bucket is full
//     (tat0 - now);
//   - sliding window: the unit calls that fit now, and the time until the
//     weighted count is zero: the end of the current window when it is
//     empty, else the end of the next one.
func Describe(g Gate, s State, now time.Time) (remaining int64, reset time.Duration) {
	switch Name(g.Algorithm) {
	case TokenBucket:
		if g.Limit < 1 {
			return 0, 0
		}
		T, tau := Interval(g.Window, g.Limit), Tau(g.Window, g.Limit, g.Burst)
		d := ahead(tatNanos(s.TAT), now.UnixNano())
		return max((tau-d)/T, 0), time.Duration(d)
	case SlidingWindow:
		wMs := g.Window.Milliseconds()
		e := Offset(now, g.Window)
		if g.Limit > 0 {
			remaining = max(min((g.Limit*wMs-s.Previous*(wMs-e))/wMs-s.Count, g.Limit), 0)
		}
		idx := WindowIndex(now, g.Window)
		switch {
		case s.Count > 0:
			reset = time.Unix(0, 0).Add(time.Duration(idx+2) * g.Window).Sub(now)
		case s.Previous > 0:
			reset = time.Unix(0, 0).Add(time.Duration(idx+1) * g.Window).Sub(now)
		}
		return remaining, max(reset, 0)
	default:
		idx := WindowIndex(now, g.Window)
		end := time.Unix(0, 0).Add(time.Duration(idx+1) * g.Window)
		return max(g.Limit-s.Count, 0), end.Sub(now)
	}
}

// RetryAfter is how long from now until a call of cost would have room on
// g, given s and no other traffic: the earliest moment it can pass on
// this gate (a call passes once every gate that denied it has room; rooms
// only grow while nothing is taken, so that is the latest of their
// RetryAfters). It is 0 when the call has room now. The exact duration:
// headers round it up to whole seconds, at least 1. A cost the gate can
// never admit (above its limit, or its burst) gets the wait after which
// the gate is as empty as it gets.
//
//   - fixed window: the window's end;
//   - token bucket: new - tau - now, the time the missing tokens take;
//   - sliding window: the first millisecond at which the weighted count
//     leaves room, in this window or the next.
func RetryAfter(g Gate, s State, now time.Time, cost int64) time.Duration {
	if room, _ := Decide(g, s, now, cost); room {
		return 0
	}
	switch Name(g.Algorithm) {
	case TokenBucket:
		if g.Limit < 1 {
			return g.Window
		}
		T, tau := Interval(g.Window, g.Limit), Tau(g.Window, g.Limit, g.Burst)
		d := ahead(tatNanos(s.TAT), now.UnixNano())
		if cost > tau/T {
			// Above the burst: it never fits; full is as good as it gets.
			return time.Duration(max(d, T))
		}
		return time.Duration(d + cost*T - tau)
	case SlidingWindow:
		return slidingRetry(g, s, now, cost)
	default:
		idx := WindowIndex(now, g.Window)
		return time.Unix(0, 0).Add(time.Duration(idx+1) * g.Window).Sub(now)
	}
}

// slidingRetry finds the first millisecond, from now on, at which a call
// of cost has room: within the current window the weight of prev shrinks
// as e grows; in the next, cur becomes the previous window's count.
func slidingRetry(g Gate, s State, now time.Time, cost int64) time.Duration {
	wMs := g.Window.Milliseconds()
	idx := WindowIndex(now, g.Window)
	at := func(window, e int64) time.Duration { // from now to offset e of window
		return time.Duration((window*wMs+e)*int64(time.Millisecond) - now.UnixNano())
	}
	if cost > g.Limit || g.Limit < 1 {
		return at(idx+2, 0) // empty by then; it never fits
	}
	// This window: prev*(W - e) <= (limit - cur - cost)*W.
	if free := g.Limit - s.Count - cost; free >= 0 && s.Previous > 0 {
		e := wMs - free*wMs/s.Previous
		if e < wMs {
			return max(at(idx, e), 0)
		}
	}
	// The next window: cur*(W - e) <= (limit - cost)*W.
	if s.Count == 0 {
		return at(idx+1, 0)
	}
	e := max(wMs-(g.Limit-cost)*wMs/s.Count, 0)
	return at(idx+1, e)
}

// Interval is the token bucket's emission interval T = ceil(W_ns / limit)
// in ns: the time one token takes to drip in (limit >= 1).
func Interval(window time.Duration, limit int64) int64 {
	if limit < 1 {
		return int64(window)
	}
	w := int64(window)
	return (w + limit - 1) / limit
}

// Tau is the token bucket's depth in time, burst*T (burst 0: limit),
// capped at MaxTau.
func Tau(window time.Duration, limit, burst int64) int64 {
	if burst <= 0 {
		burst = limit
	}
	T := Interval(window, limit)
	if burst <= 0 || T <= 0 {
		return 0
	}
	if burst > MaxTau/T {
		return MaxTau
	}
	return burst * T
}

// GCRA decides a call of cost at now (ns) on a bucket whose theoretical
// arrival time is tat (ns; 0 or not after now: full), with emission
// interval T and depth tau: room iff max(tat, now) + cost*T - now <= tau,
// and the TAT to store when the call is taken.
func GCRA(tat, now, cost, T, tau int64) (room bool, newTAT int64) {
	if T <= 0 || cost < 1 || tau <= 0 {
		return false, tat
	}
	d := ahead(tat, now) // tat0 - now
	if cost > tau/T || d > tau-cost*T {
		return false, tat
	}
	return true, now + d + cost*T
}

// FixedRoom: a call of cost fits a fixed window holding count of limit.
func FixedRoom(count, cost, limit int64) bool {
	return cost >= 1 && cost <= limit-count
}

// SlidingRoom: a call of cost fits a sliding window whose current window
// holds cur, whose previous window holds prev, at offset e (ms) of a
// window of wMs: prev*(wMs - e) + (cur + cost)*wMs <= limit*wMs.
func SlidingRoom(prev, cur, cost, limit, wMs, e int64) bool {
	if cost < 1 || cost > limit || wMs <= 0 {
		return false
	}
	return prev*(wMs-e)+(cur+cost)*wMs <= limit*wMs
}

// WindowIndex is floor(now / window), the index of the epoch-aligned
// window now is in (negative before 1970).
func WindowIndex(now time.Time, window time.Duration) int64 {
	return floorDiv(now.UnixNano(), int64(window))
}

// Offset is the sliding window's e: milliseconds since the start of the
// window now is in (now_ms - idx*W_ms, with now_ms = floor(now / 1 ms)).
func Offset(now time.Time, window time.Duration) int64 {
	wMs := window.Milliseconds()
	ms := floorDiv(now.UnixNano(), int64(time.Millisecond))
	return ms - floorDiv(ms, wMs)*wMs
}

// ahead is max(tat, now) - now: how far the bucket is from full, in ns.
func ahead(tat, now int64) int64 {
	if tat <= now {
		return 0
	}
	return tat - now
}

// tatNanos is t in ns, math.MinInt64 for the zero time (a full bucket).
func tatNanos(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
