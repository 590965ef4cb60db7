package httpgate_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/httpgate"
)

func TestSetHeadersFormat(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 0, 0, 20, 500_000_000, time.UTC) // 20.5 s into a minute
	reset := time.Date(2026, 3, 2, 0, 1, 0, 0, time.UTC)
	dayReset := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	minute := enforce.Gate{DefinitionID: "target:mcp_server:s:60", WindowSeconds: 60, Limit: 5, Count: 5, Remaining: 0, Reset: reset}
	day := enforce.Gate{DefinitionID: "target:mcp_server:s:86400", WindowSeconds: 86400, Limit: 100, Count: 5, Remaining: 95, Reset: dayReset}
	shadow := enforce.Gate{DefinitionID: "caller:group:trial:60", WindowSeconds: 60, Limit: 1, Count: 2, Remaining: 0, Reset: reset, Shadow: true}

	cases := []struct {
		name string
		d    enforce.Decision
		want map[string]string // "" means absent
	}{
		{
			name: "allowed: the tightest enforce gate, shadow gates ignored",
			d: enforce.Decision{Allowed: true, Reason: enforce.ReasonAllowed, Limit: 100, Remaining: 94, Reset: dayReset,
				Gates: []enforce.Gate{shadow, {DefinitionID: "target:mcp_server:s:60", WindowSeconds: 60, Limit: 10, Remaining: 94 + 1, Reset: reset}, func() enforce.Gate { g := day; g.Remaining = 94; return g }()}},
			want: map[string]string{
				"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "94", "X-RateLimit-Reset": "1772496000",
				// Every enforce policy, the tightest first (the list).
				"RateLimit-Policy": `"target:mcp_server:s:86400";q=100;w=86400, "target:mcp_server:s:60";q=10;w=60`,
				"RateLimit":        `"target:mcp_server:s:86400";r=94;t=86380`,
				"Retry-After":      "",
			},
		},
		{
			name: "throttled: the denying gate, Retry-After rounded up",
			d: enforce.Decision{Allowed: false, Reason: enforce.ReasonThrottled, Limit: 5, Remaining: 0, Reset: reset,
				RetryAfter: 40 * time.Second, Gates: []enforce.Gate{minute, day}, Denied: []enforce.Gate{minute}},
			want: map[string]string{
				"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1772409660",
				"RateLimit-Policy": `"target:mcp_server:s:60";q=5;w=60, "target:mcp_server:s:86400";q=100;w=86400`,
				"RateLimit":        `"target:mcp_server:s:60";r=0;t=40`,
				"Retry-After":      "40",
			},
		},
		{
			name: "throttled without RetryAfter falls back to the reset, at least 1",
			d: enforce.Decision{Allowed: false, Reason: enforce.ReasonThrottled, Limit: 5, Reset: now.Add(100 * time.Millisecond),
				Gates: []enforce.Gate{minute}, Denied: []enforce.Gate{minute}},
			want: map[string]string{"Retry-After": "1", "X-RateLimit-Limit": "5", "RateLimit": `"target:mcp_server:s:60";r=0;t=1`},
		},
		{
			name: "no gate: no headers",
			d:    enforce.Decision{Allowed: true, Reason: enforce.ReasonAllowed},
			want: map[string]string{"X-RateLimit-Limit": "", "X-RateLimit-Remaining": "", "X-RateLimit-Reset": "",
				"RateLimit-Policy": "", "RateLimit": "", "Retry-After": ""},
		},
		{
			name: "fail open: no headers",
			d:    enforce.Decision{Allowed: true, Reason: enforce.ReasonFailOpen, Gates: []enforce.Gate{minute}},
			want: map[string]string{"X-RateLimit-Limit": "", "RateLimit": "", "Retry-After": ""},
		},
		{
			name: "quarantined: no rate headers, no Retry-After",
			d:    enforce.Decision{Allowed: false, Reason: enforce.ReasonQuarantined, QuarantineScope: "caller"},
			want: map[string]string{"X-RateLimit-Limit": "", "X-RateLimit-Remaining": "", "X-RateLimit-Reset": "",
				"RateLimit-Policy": "", "RateLimit": "", "Retry-After": ""},
		},
		{
			name: "fail closed: Retry-After only",
			d:    enforce.Decision{Allowed: false, Reason: enforce.ReasonFailClosed, RetryAfter: time.Second, Gates: []enforce.Gate{minute}},
			want: map[string]string{"Retry-After": "1", "X-RateLimit-Limit": "", "RateLimit-Policy": "", "RateLimit": ""},
		},
		{
			name: "a policy name is a structured-field string",
			d: enforce.Decision{Allowed: true, Reason: enforce.ReasonAllowed, Limit: 3, Remaining: 2, Reset: reset,
				Gates: []enforce.Gate{{DefinitionID: `target:a2a_agent:/a"b\c:60`, WindowSeconds: 60, Limit: 3, Remaining: 2, Reset: reset}}},
			want: map[string]string{"RateLimit-Policy": `"target:a2a_agent:/a\"b\\c:60";q=3;w=60`},
		},
		{
			name: "several denying gates: the one that resets last names the policy",
			d: enforce.Decision{Allowed: false, Reason: enforce.ReasonThrottled, Limit: 100, Remaining: 0, Reset: dayReset,
				RetryAfter: dayReset.Sub(now), Gates: []enforce.Gate{minute, day}, Denied: []enforce.Gate{minute, day}},
			want: map[string]string{"RateLimit-Policy": `"target:mcp_server:s:86400";q=100;w=86400, "target:mcp_server:s:60";q=5;w=60`, "Retry-After": "86380",
				"X-RateLimit-Reset": "1772496000"},
		},
	}
	// A token bucket (120 a minute, burst 30) whose missing token is due in
	// 0.5 s, full in 15 s, beside the minute window that ends in 39.5 s.
	bucket := enforce.Gate{DefinitionID: "caller:group:bursty:60", Algorithm: enforce.AlgorithmTokenBucket, WindowSeconds: 60,
		Limit: 120, Burst: 30, Count: 30, Remaining: 0, Reset: now.Add(15 * time.Second), RetryAfter: 500 * time.Millisecond}
	shadowBucket := bucket
	shadowBucket.DefinitionID, shadowBucket.Shadow = "caller:group:trial:60", true
	minuteDenied := minute
	minuteDenied.RetryAfter = reset.Sub(now)
	// A bucket full only in 50 s (after the minute's end) whose next token
	// is due in 0.5 s: it resets last, but the minute makes the call wait.
	slowFull := bucket
	slowFull.Reset = now.Add(50 * time.Second)
	cases = append(cases,
		struct {
			name string
			d    enforce.Decision
			want map[string]string
		}{
			name: "token bucket: the burst in the policy, shadow policies not listed",
			d: enforce.Decision{Allowed: true, Reason: enforce.ReasonAllowed, Limit: 120, Remaining: 29, Reset: now.Add(500 * time.Millisecond),
				Gates: []enforce.Gate{shadowBucket, func() enforce.Gate {
					g := bucket
					g.Count, g.Remaining, g.Reset, g.RetryAfter = 1, 29, now.Add(500*time.Millisecond), 0
					return g
				}()}},
			want: map[string]string{
				"RateLimit-Policy":  `"caller:group:bursty:60";q=120;w=60;rlctl-burst=30`,
				"RateLimit":         `"caller:group:bursty:60";r=29;t=1`,
				"X-RateLimit-Reset": "1772409621", // 21 s into the minute: 20.5 s + 0.5 s, rounded up
			},
		},
		struct {
			name string
			d    enforce.Decision
			want map[string]string
		}{
			name: "several denying gates: the longest wait names the policy, not the latest reset",
			d: enforce.Decision{Allowed: false, Reason: enforce.ReasonThrottled, Limit: 5, Remaining: 0, Reset: reset,
				RetryAfter: 40 * time.Second, Gates: []enforce.Gate{slowFull, minuteDenied}, Denied: []enforce.Gate{slowFull, minuteDenied}},
			want: map[string]string{
				"RateLimit-Policy": `"target:mcp_server:s:60";q=5;w=60, "caller:group:bursty:60";q=120;w=60;rlctl-burst=30`,
				"RateLimit":        `"target:mcp_server:s:60";r=0;t=40`,
				"Retry-After":      "40",
			},
		},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			// Stale values from an earlier decision must not survive.
			h.Set("X-RateLimit-Limit", "999")
			h.Set("Retry-After", "999")
			h.Set("Content-Type", "text/plain")
			httpgate.SetHeaders(h, c.d, now)
			for k, want := range c.want {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			if h.Get("Content-Type") != "text/plain" {
				t.Error("SetHeaders touched an unrelated header")
			}
		})
	}
}

// TestSetHeadersFromARealDecision checks the headers of decisions the
// Enforcer makes, on its fixed clock.
func TestSetHeadersFromARealDecision(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	f.Def(target("mcp_server", "s", 60, 2), target("mcp_server", "s", 3600, 50))
	f.Clock.Advance(20*time.Second + 500*time.Millisecond)

	h := http.Header{}
	httpgate.SetHeaders(h, f.Check(user("alice", "s")), f.Clock.Now())
	want := map[string]string{
		"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "1",
		"X-RateLimit-Reset": "1772409660", // 2026-03-02T00:01:00Z
		"RateLimit-Policy":  `"target:mcp_server:s:60";q=2;w=60, "target:mcp_server:s:3600";q=50;w=3600`,
		"RateLimit":         `"target:mcp_server:s:60";r=1;t=40`,
		"Retry-After":       "",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("first call: %s = %q, want %q", k, got, v)
		}
	}

	f.Check(user("alice", "s"))
	d := f.Check(user("alice", "s"))
	if d.Allowed {
		t.Fatalf("third call at 2/min allowed: %+v", d)
	}
	h = http.Header{}
	httpgate.SetHeaders(h, d, f.Clock.Now())
	want = map[string]string{
		"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": "0",
		"RateLimit-Policy": `"target:mcp_server:s:60";q=2;w=60, "target:mcp_server:s:3600";q=50;w=3600`,
		"RateLimit":        `"target:mcp_server:s:60";r=0;t=40`,
		"Retry-After":      "40",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("throttled: %s = %q, want %q", k, got, v)
		}
	}
}
