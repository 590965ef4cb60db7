package validate

import (
	"reflect"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestAlgorithmAccepts: every algorithm on every rate axis, bursts where
// a token bucket has them, the floors on a sliding window's and a token
// bucket's sustained rate (limit per window scaled to a minute), never on
// the burst. The algorithm is kept as given and is not part of the id.
func TestAlgorithmAccepts(t *testing.T) {
	t.Parallel()
	type def = ratelimit.Definition
	tests := []struct {
		name string
		in   def
	}{
		{"fixed_window spelled out", edited(callerGroup(), func(d *def) { d.Algorithm = ratelimit.AlgorithmFixedWindow })},
		{"sliding_window caller group", edited(callerGroup(), func(d *def) { d.Algorithm = ratelimit.AlgorithmSlidingWindow })},
		{"token_bucket caller group without bursts", edited(callerGroup(), func(d *def) { d.Algorithm = ratelimit.AlgorithmTokenBucket })},
		{"token_bucket caller group with both bursts", edited(callerGroup(), func(d *def) {
			d.Algorithm, d.UserBurst, d.AgentBurst = ratelimit.AlgorithmTokenBucket, ptr(300), ptr(1)
		})},
		{"token_bucket caller_target with a user burst", edited(callerGroup(), func(d *def) {
			d.Axis, d.Algorithm, d.UserBurst = ratelimit.AxisCallerTarget, ratelimit.AlgorithmTokenBucket, ptr(5)
		})},
		{"token_bucket target with a burst", edited(targetServer(), func(d *def) {
			d.Algorithm, d.Burst = ratelimit.AlgorithmTokenBucket, ptr(1_000_000_000)
		})},
		{"sliding_window target", edited(targetServer(), func(d *def) { d.Algorithm = ratelimit.AlgorithmSlidingWindow })},
		// 5 per 10 s is 30/min: above the user floor of 20/min, although
		// a fixed window of 5 per 10 s is refused.
		{"token bucket: the floor is on the sustained rate", edited(callerGroup(), func(d *def) {
			d.Algorithm, d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests, d.UserBurst = ratelimit.AlgorithmTokenBucket, 10, ptr(5), nil, ptr(1)
		})},
		{"sliding window: 4 per 12 s is the floor of 20/min exactly", edited(callerGroup(), func(d *def) {
			d.Algorithm, d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests = ratelimit.AlgorithmSlidingWindow, 12, ptr(4), nil
		})},
		{"token bucket: 19 a second is far above the floor", edited(callerGroup(), func(d *def) {
			d.Algorithm, d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests = ratelimit.AlgorithmTokenBucket, 1, ptr(19), nil
		})},
		{"token bucket over a day below the floor: exempt, as the windows", edited(callerGroup(), func(d *def) {
			d.Algorithm, d.WindowSeconds, d.UserMaxRequests, d.AgentMaxRequests = ratelimit.AlgorithmTokenBucket, 86400, ptr(5), nil
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Definition(tt.in, DefaultFloors())
			if err != nil {
				t.Fatalf("Definition: %v", err)
			}
			if got.Algorithm != tt.in.Algorithm || !reflect.DeepEqual(got.Burst, tt.in.Burst) ||
				!reflect.DeepEqual(got.UserBurst, tt.in.UserBurst) || !reflect.DeepEqual(got.AgentBurst, tt.in.AgentBurst) {
				t.Errorf("got algorithm %q bursts %v %v %v, want them as given", got.Algorithm, got.Burst, got.UserBurst, got.AgentBurst)
			}
			plain := tt.in
			plain.Algorithm, plain.Burst, plain.UserBurst, plain.AgentBurst = "", nil, nil, nil
			if got.ID != plain.Key() {
				t.Errorf("id %q, want %q: the algorithm is not part of the identity", got.ID, plain.Key())
			}
			if again, err := Definition(got, DefaultFloors()); err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("normalizing the result again gave %+v, %v", again, err)
			}
		})
	}
}

// TestAlgorithmRefuses: an unknown algorithm, a burst below 1 (or above
// the limits' cap), a burst on an axis that has none or without its
// limit, any burst on a window algorithm, an algorithm on the quarantine
// axis, and a sustained rate below the floor: each refused naming its
// field and rule.
func TestAlgorithmRefuses(t *testing.T) {
	t.Parallel()
	type def = ratelimit.Definition
	tb := func(d def) def { d.Algorithm = ratelimit.AlgorithmTokenBucket; return d }
	tests := []struct {
		name    string
		in      def
		field   string
		message string
	}{
		{"unknown algorithm", edited(callerGroup(), func(d *def) { d.Algorithm = "leaky_bucket" }),
			"algorithm", `algorithm: must be one of fixed_window, sliding_window, token_bucket (got "leaky_bucket")`},
		{"algorithm in the wrong case", edited(targetServer(), func(d *def) { d.Algorithm = "Token_Bucket" }),
			"algorithm", `algorithm: must be one of fixed_window, sliding_window, token_bucket (got "Token_Bucket")`},
		{"burst 0", edited(tb(targetServer()), func(d *def) { d.Burst = ptr(0) }),
			"burst", "burst: must be >= 1 (got 0)"},
		{"negative user burst", edited(tb(callerGroup()), func(d *def) { d.UserBurst = ptr(-3) }),
			"user_burst", "user_burst: must be >= 1 (got -3)"},
		{"agent burst above a billion", edited(tb(callerGroup()), func(d *def) { d.AgentBurst = ptr(2_000_000_000) }),
			"agent_burst", "agent_burst: must be <= 1000000000 (got 2000000000)"},
		{"burst on the caller axis", edited(tb(callerGroup()), func(d *def) { d.Burst = ptr(5) }),
			"burst", "burst: not allowed on the caller axis; use user_burst and/or agent_burst"},
		{"burst on the caller_target axis", edited(tb(callerGroup()), func(d *def) { d.Axis, d.Burst = ratelimit.AxisCallerTarget, ptr(5) }),
			"burst", "burst: not allowed on the caller_target axis; use user_burst and/or agent_burst"},
		{"user burst on the target axis", edited(tb(targetServer()), func(d *def) { d.UserBurst = ptr(5) }),
			"user_burst", "user_burst: not allowed on the target axis; use burst"},
		{"agent burst on the target axis", edited(tb(targetServer()), func(d *def) { d.AgentBurst = ptr(5) }),
			"agent_burst", "agent_burst: not allowed on the target axis; use burst"},
		{"agent burst without agent_max_requests", edited(tb(callerGroup()), func(d *def) { d.AgentMaxRequests, d.AgentBurst = nil, ptr(5) }),
			"agent_burst", "agent_burst: not allowed without agent_max_requests: it is the capacity of that limit's bucket"},
		{"burst on a fixed window (the default)", edited(targetServer(), func(d *def) { d.Burst = ptr(5) }),
			"burst", "burst: not allowed with algorithm fixed_window; a burst is the capacity of a token_bucket (set algorithm: token_bucket, or drop burst)"},
		{"user burst on a sliding window", edited(callerGroup(), func(d *def) { d.Algorithm, d.UserBurst = ratelimit.AlgorithmSlidingWindow, ptr(5) }),
			"user_burst", "user_burst: not allowed with algorithm sliding_window; a burst is the capacity of a token_bucket (set algorithm: token_bucket, or drop user_burst)"},
		{"burst on the quarantine axis", edited(quarantineSentinel(ratelimit.GroupQuarantineCallers), func(d *def) { d.Burst = ptr(1) }),
			"burst", "burst: not allowed on the quarantine axis; quarantine blocks outright and carries no rate"},
		{"algorithm on the quarantine axis", edited(quarantineSentinel(ratelimit.GroupQuarantineTargets), func(d *def) { d.Algorithm = ratelimit.AlgorithmTokenBucket }),
			"algorithm", `algorithm: not allowed on the quarantine axis; quarantine blocks outright and counts nothing (got "token_bucket")`},
		// 3 per 10 s is 18/min; the least that reaches 20/min is 4 per 10 s.
		{"token bucket's sustained rate below the floor", edited(tb(callerGroup()), func(d *def) { d.WindowSeconds, d.UserMaxRequests = 10, ptr(3) }),
			"user_max_requests", "user_max_requests 3 per 10s is a sustained rate of 18/min, below the user floor of 20/min for windows <= 60s; raise it to at least 4 or use a window longer than 60s"},
		// 2 per 7 s is 17.1/min, the agent floor 10/min needs 2: fine; 1 per 7 s is 8.6/min.
		{"sliding window's rate below the agent floor, a fraction", edited(callerGroup(), func(d *def) {
			d.Algorithm, d.Axis, d.WindowSeconds, d.AgentMaxRequests = ratelimit.AlgorithmSlidingWindow, ratelimit.AxisCallerTarget, 7, ptr(1)
		}), "agent_max_requests", "agent_max_requests 1 per 7s is a sustained rate of 8.6/min, below the agent floor of 10/min for windows <= 60s; raise it to at least 2 or use a window longer than 60s"},
		// The burst is not the rate: a big burst does not lift a low rate.
		{"a burst does not lift the rate over the floor", edited(tb(callerGroup()), func(d *def) {
			d.WindowSeconds, d.UserMaxRequests, d.UserBurst = 60, ptr(19), ptr(1000)
		}), "user_max_requests", "user_max_requests 19 per 60s is a sustained rate of 19/min, below the user floor of 20/min for windows <= 60s; raise it to at least 20 or use a window longer than 60s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Definition(tt.in, DefaultFloors())
			wantProblem(t, err, tt.field, tt.message)
			if !reflect.DeepEqual(got, ratelimit.Definition{}) {
				t.Errorf("got %+v alongside the error, want the zero Definition", got)
			}
		})
	}
}
