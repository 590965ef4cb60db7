package envoyrls_test

// Answers and counting as Envoy's ratelimit service gives them
// (src/service/ratelimit.go, src/limiter/base_limiter.go,
// src/redis/fixed_cache_impl.go), per descriptor: code, current_limit and
// limit_remaining, through the real listener over PostgreSQL.

import (
	"fmt"
	"strings"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"

	"github.com/rlctl/rlctl/pkg/envoyrls"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// answer renders an answer as "<overall> | <code> <limit>/<unit> <remaining>"
// per descriptor ("-" for no limit).
func answer(r *rlsv3.RateLimitResponse) string {
	parts := []string{r.OverallCode.String()}
	for _, st := range r.Statuses {
		lim := "-"
		if l := st.CurrentLimit; l != nil {
			lim = fmt.Sprintf("%d/%s", l.RequestsPerUnit, l.Unit)
		}
		parts = append(parts, fmt.Sprintf("%s %s %d", st.Code, lim, st.LimitRemaining))
	}
	return strings.Join(parts, " | ")
}

var countModes = []envoyrls.CountMode{envoyrls.CountAllOrNothing, envoyrls.CountEveryDescriptor}

func startMode(t *testing.T, mode envoyrls.CountMode) *harness {
	return start(t, func(o *envoyrls.Options) { o.CountMode = mode })
}

// inEachMode runs f in parallel subtests, one per count mode, each on a
// harness of its own serving that mode.
func inEachMode(t *testing.T, f func(t *testing.T, mode envoyrls.CountMode, h *harness)) {
	t.Parallel()
	for _, mode := range countModes {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			f(t, mode, startMode(t, mode))
		})
	}
}

func (h *harness) expect(t *testing.T, step, want string, hits uint32, domain string, ds ...*ratelimitv3.RateLimitDescriptor) {
	t.Helper()
	if got := answer(h.askHits(t, hits, domain, ds...)); got != want {
		t.Errorf("%s:\n got %s\nwant %s", step, got, want)
	}
}

// TestReplacesAcrossDescriptors: Envoy's example.yaml, where
// category=account replaces the limit named bkthomps: with both in one
// request, bkthomps is not evaluated (OK without a limit) in either mode.
func TestReplacesAcrossDescriptors(t *testing.T) {
	inEachMode(t, func(t *testing.T, mode envoyrls.CountMode, h *harness) {
		account := desc("rl", 60, 4, "category", "account")
		account.Replaces = []string{"bkthomps", "fake_name"}
		bk := desc("rl", 60, 1, "foo", "", "bar", "bkthomps")
		bk.LimitName = "bkthomps"
		h.define(t, account, bk, desc("rl", 60, 1, "source_cluster", "proxy", "destination_cluster", "mock"))
		req := []*ratelimitv3.RateLimitDescriptor{rd("category", "account"),
			rd("source_cluster", "proxy", "destination_cluster", "mock"), rd("foo", "v2", "bar", "bkthomps")}
		h.expect(t, "first", "OK | OK 4/MINUTE 3 | OK 1/MINUTE 0 | OK - 0", 0, "rl", req...)
		want := map[envoyrls.CountMode]string{
			// One take: mock denies, nothing is counted.
			envoyrls.CountAllOrNothing: "OVER_LIMIT | OK 4/MINUTE 3 | OVER_LIMIT 1/MINUTE 0 | OK - 0",
			// Envoy's: account counted, mock over, bkthomps replaced.
			envoyrls.CountEveryDescriptor: "OVER_LIMIT | OK 4/MINUTE 2 | OVER_LIMIT 1/MINUTE 0 | OK - 0",
		}[mode]
		h.expect(t, "second", want, 0, "rl", req...)
		// Alone, bkthomps applies.
		h.expect(t, "bkthomps alone", "OK | OK 1/MINUTE 0", 0, "rl", rd("foo", "v2", "bar", "bkthomps"))
	})
}

// TestLimitOverrideZero: an override of requests_per_unit 0 refuses, as
// Envoy's service answers it (OVER_LIMIT 0/MINUTE), rather than an error
// Envoy's filter would let through.
func TestLimitOverrideZero(t *testing.T) {
	inEachMode(t, func(t *testing.T, mode envoyrls.CountMode, h *harness) {
		h.define(t, desc("rl", 60, 5, "k", ""))
		zero := rd("k", "v")
		zero.Limit = &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 0, Unit: typev3.RateLimitUnit_MINUTE}
		want := map[envoyrls.CountMode]string{
			envoyrls.CountAllOrNothing:    "OVER_LIMIT | OVER_LIMIT 0/MINUTE 0 | OK 5/MINUTE 5", // nothing taken
			envoyrls.CountEveryDescriptor: "OVER_LIMIT | OVER_LIMIT 0/MINUTE 0 | OK 5/MINUTE 4",
		}[mode]
		h.expect(t, "override 0", want, 0, "rl", zero, rd("k", "w"))
	})
}

// TestShadowAnswersItsLimit: a shadow-mode descriptor is OK with its limit
// and remaining (Envoy: OK 20/MINUTE remaining 15), and OK with 0 once a
// request does not fit.
func TestShadowAnswersItsLimit(t *testing.T) {
	inEachMode(t, func(t *testing.T, mode envoyrls.CountMode, h *harness) {
		shadow := desc("rl", 60, 20, "baz", "shady")
		shadow.Mode = ratelimit.ModeShadow
		h.define(t, shadow)
		h.expect(t, "5 hits", "OK | OK 20/MINUTE 15", 5, "rl", rd("baz", "shady"))
		h.expect(t, "20 more", "OK | OK 20/MINUTE 0", 20, "rl", rd("baz", "shady"))
	})
}

// TestOverLimitRemainingZero: with 14 of 20 used, 20 hits are OVER_LIMIT
// with limit_remaining 0, as Envoy answers (not the 6 left).
func TestOverLimitRemainingZero(t *testing.T) {
	inEachMode(t, func(t *testing.T, mode envoyrls.CountMode, h *harness) {
		h.define(t, desc("rl", 60, 20, "k", ""))
		h.expect(t, "14 hits", "OK | OK 20/MINUTE 6", 14, "rl", rd("k", "v"))
		r := h.askHits(t, 20, "rl", rd("k", "v"))
		if got, want := answer(r), "OVER_LIMIT | OVER_LIMIT 20/MINUTE 0"; got != want {
			t.Errorf("20 hits: %s, want %s", got, want)
		}
		if d := r.Statuses[0].DurationUntilReset.AsDuration().Seconds(); d != 50 {
			t.Errorf("duration_until_reset %vs, want 50 (the minute's end)", d)
		}
	})
}

// TestEveryDescriptorCountsPastTheLimit: in the every-descriptor mode a
// refused hit is counted, as Envoy's counter goes past its limit, so a
// later single hit is refused; all-or-nothing counts nothing refused.
func TestEveryDescriptorCountsPastTheLimit(t *testing.T) {
	inEachMode(t, func(t *testing.T, mode envoyrls.CountMode, h *harness) {
		h.define(t, desc("rl", 60, 20, "k", ""))
		h.expect(t, "14 hits", "OK | OK 20/MINUTE 6", 14, "rl", rd("k", "v"))
		h.expect(t, "10 hits", "OVER_LIMIT | OVER_LIMIT 20/MINUTE 0", 10, "rl", rd("k", "v"))
		want := map[envoyrls.CountMode]string{
			envoyrls.CountAllOrNothing:    "OK | OK 20/MINUTE 5",
			envoyrls.CountEveryDescriptor: "OVER_LIMIT | OVER_LIMIT 20/MINUTE 0", // 25 of 20
		}[mode]
		h.expect(t, "then 1 hit", want, 1, "rl", rd("k", "v"))
	})
}

// TestSameCounterTwice: a descriptor sent twice counts twice, in request
// order: Envoy increments its counter once per descriptor, and each
// answer is that increment's. In every-descriptor mode the first copy
// sees the first increment, the second the second; all or nothing needs
// room for both.
func TestSameCounterTwice(t *testing.T) {
	t.Parallel()
	t.Run(string(envoyrls.CountEveryDescriptor), func(t *testing.T) {
		t.Parallel()
		h := startMode(t, envoyrls.CountEveryDescriptor)
		h.define(t, desc("rl", 60, 3, "k", ""))
		// Several counters, so that an order left to chance shows.
		for i := range 8 {
			v := fmt.Sprint("v", i)
			h.expect(t, v+" twice", "OVER_LIMIT | OK 3/MINUTE 1 | OVER_LIMIT 3/MINUTE 0", 2, "rl", rd("k", v), rd("k", v))
			h.expect(t, v+" after", "OVER_LIMIT | OVER_LIMIT 3/MINUTE 0", 1, "rl", rd("k", v)) // 4 of 3
		}
	})
	t.Run(string(envoyrls.CountAllOrNothing), func(t *testing.T) {
		t.Parallel()
		h := startMode(t, envoyrls.CountAllOrNothing)
		h.define(t, desc("rl", 60, 3, "k", ""), desc("rl", 60, 10, "j", ""))
		h.expect(t, "twice", "OK | OK 3/MINUTE 1 | OK 3/MINUTE 1 | OK 10/MINUTE 9", 1, "rl", rd("k", "v"), rd("k", "v"), rd("j", "v"))
		// One left: the pair does not fit, and takes nothing.
		h.expect(t, "twice again", "OVER_LIMIT | OVER_LIMIT 3/MINUTE 0 | OVER_LIMIT 3/MINUTE 0 | OK 10/MINUTE 9", 1, "rl",
			rd("k", "v"), rd("k", "v"), rd("j", "v"))
		h.expect(t, "once", "OK | OK 3/MINUTE 0", 1, "rl", rd("k", "v"))
	})
}
