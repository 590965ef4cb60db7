package plan

import (
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Gate is one limit a call is checked against (pkg/enforce calls it
// enforce.Gate). The plan builds it: the definition, the limit, the
// counter key and why it applies; the core's decision fills Count,
// Remaining, Reset (set here to the end of the window the plan was built
// in) and RetryAfter.
type Gate struct {
	// DefinitionID is the definition behind the gate. For the caller and
	// caller_target axes, where the most restrictive definition of each
	// window and algorithm wins, it is that definition.
	DefinitionID string `json:"definition_id"`
	Axis         string `json:"axis"`
	EntityType   string `json:"entity_type"`
	// Algorithm is how the gate counts (never empty: fixed_window by
	// default).
	Algorithm     algorithm.Name `json:"algorithm"`
	WindowSeconds int            `json:"window_seconds"`
	// Limit is what the gate admits per window (the token bucket's
	// sustained rate, Limit per WindowSeconds).
	Limit int64 `json:"limit"`
	// Burst is the token bucket's capacity (0 for the windows).
	Burst int64 `json:"burst,omitempty"`
	// Count is the gate's count after the decision: the current window's
	// count, or for a token bucket the tokens missing from a full bucket
	// (rounded up).
	Count int64 `json:"count"`
	// Remaining is what a call of cost 1 could still take after the
	// decision: what is left in the window, the sliding window's room, or
	// the bucket's whole tokens (the r of the RateLimit header).
	Remaining int64 `json:"remaining"`
	// Reset is when the gate is back to its full limit: the window's end,
	// the end of the window after which the sliding window weighs nothing,
	// or when the bucket is full.
	Reset  time.Time `json:"reset"`
	Shadow bool      `json:"shadow,omitempty"`
	// RetryAfter, on a gate that had no room, is how long until it has
	// room for the call (exact, not rounded; 0 when it had room).
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Descriptor is, for a gate of a call's descriptor, its index in
	// Call.Descriptors plus one; 0 for every other gate.
	Descriptor int `json:"-"`

	// MatchedBy says why a caller or caller_target definition applied to
	// the call: the membership that put the caller in its group (user:alice,
	// client:bot, team:acme, network:10.0.0.0/8), or "everyone" for a
	// definition for everyone (MatchedEveryone). Empty for target gates.
	MatchedBy string `json:"matched_by,omitempty"`
	// Overrides names the definitions this gate's definition, an override
	// (ratelimit.Definition.Override), took the bucket from: less specific
	// ones whose limits would otherwise have applied. Empty when it
	// overrode none.
	Overrides []string `json:"overrides,omitempty"`

	// Why the gate applies, for route definitions: Matched is the pattern
	// the call's path matched, Dimension what the bucket is kept per
	// (DimensionAll, DimensionIP, DimensionUser, DimensionAgent). Empty on
	// other gates.
	Matched   string `json:"matched,omitempty"`
	Dimension string `json:"dimension,omitempty"`

	key   string
	parts counterkey.Parts // of key, for the store (CounterGate.Parts)
	// failPolicy is the definition's own fail policy
	// (ratelimit.Definition.FailPolicyOf; "" leaves it to the enforcer's
	// default); of a bucket several definitions share, the strictest
	// (StricterFailPolicy).
	failPolicy string
	// lockout is the definition's counts_toward_lockout (nil: by the
	// bucket's kind, Gate.countsTowardLockout); of a bucket several
	// definitions share, that of the definition whose limit applies.
	lockout *bool
	// lease is the definition's say in leases (leaseModeOf), for a store
	// layer that leases (pkg/enforce.CounterGate.Lease); of a bucket several
	// definitions share, the strongest.
	lease LeaseMode
	// precedence ranks the gate against the others of a bucket several
	// caller definitions share (precedence.go).
	precedence precedence
}

// Key is the counter the gate counts on (counterkey.Key.String()).
func (g Gate) Key() string { return g.key }

// FailClosed reports whether the gate denies calls when the counter store
// fails: a definition behind it has the fail policy closed (or is marked
// fail_closed).
func (g Gate) FailClosed() bool { return g.failPolicy == ratelimit.FailPolicyClosed }

// FailPolicy is the fail policy of the gate's definition
// (ratelimit.FailPolicy*), "" when it leaves the choice to the enforcer's
// default; of a bucket several definitions share, the strictest.
func (g Gate) FailPolicy() string { return g.failPolicy }

// StricterFailPolicy is the stricter of two fail policies, for a bucket
// several definitions share: closed, then degrade, then open, then ""
// (the enforcer's default).
func StricterFailPolicy(a, b string) string {
	if failPolicyRank(b) > failPolicyRank(a) {
		return b
	}
	return a
}

func failPolicyRank(p string) int {
	switch p {
	case ratelimit.FailPolicyClosed:
		return 3
	case ratelimit.FailPolicyDegrade:
		return 2
	case ratelimit.FailPolicyOpen:
		return 1
	}
	return 0
}

// Lease is the definitions' say in leases of the gate's counter (of a
// bucket several definitions share, the strongest).
func (g Gate) Lease() LeaseMode { return g.lease }

// Parts are the gate's counter key's parts, for a store that indexes
// counters by them (counterkey.PartsOf, computed once with the gate).
func (g Gate) Parts() counterkey.Parts { return g.parts }

// MatchedEveryone is Gate.MatchedBy of a definition for everyone.
const MatchedEveryone = "everyone"

// matched sets the gate's MatchedBy.
func matched(g Gate, via string) Gate {
	g.MatchedBy = via
	return g
}

// algorithmOf is d's algorithm, fixed_window when it names none.
func algorithmOf(d ratelimit.Definition) algorithm.Name {
	return algorithm.Name(d.AlgorithmOrDefault())
}

// CountsTowardLockout is the definition's counts_toward_lockout behind
// the gate (of a bucket several definitions share, that of the definition
// whose limit applies): set reports whether the definition says; when it
// does not, an escalation decides by the gate's bucket (Key).
func (g Gate) CountsTowardLockout() (counts, set bool) {
	if g.lockout == nil {
		return false, false
	}
	return *g.lockout, true
}

// LeaseMode is a gate's definition's say in leases
// (ratelimit.Definition.Lease), carried on CounterGate.Lease. The values
// are ordered by precedence: of a bucket several definitions share, the
// greatest applies, so never on any of them wins over always, which wins
// over auto.
type LeaseMode uint8

const (
	// LeaseAuto: the layer decides (hot keys, or every key).
	LeaseAuto LeaseMode = iota
	// LeaseAlways: leased from the first call.
	LeaseAlways
	// LeaseNever: never leased; every call is counted on the shared
	// counter.
	LeaseNever
)

// leaseModeOf is d's lease mode; an unknown value (validation refuses
// it) is auto.
func leaseModeOf(d ratelimit.Definition) LeaseMode {
	switch d.Lease {
	case ratelimit.LeaseNever:
		return LeaseNever
	case ratelimit.LeaseAlways:
		return LeaseAlways
	}
	return LeaseAuto
}

// newGate builds a gate of d's algorithm. Reset is, until the decision
// says otherwise, the end of the window now is in (windows are aligned on
// the epoch: index floor(unix/window)), as the counter store computes it
// from the same now. A token bucket's burst defaults to its limit; the
// windows have none.
func newGate(d ratelimit.Definition, key string, limit int64, burst *int, shadow bool, now time.Time) Gate {
	w := int64(d.WindowSeconds)
	idx := now.Unix() / w
	g := Gate{
		DefinitionID: d.ID, Axis: d.Axis, EntityType: d.EntityType, Algorithm: algorithmOf(d), WindowSeconds: d.WindowSeconds,
		Limit: limit, Reset: time.Unix((idx+1)*w, 0), Shadow: shadow,
		key: key, parts: counterkey.PartsOf(key), failPolicy: d.FailPolicyOf(), lease: leaseModeOf(d), lockout: d.CountsTowardLockout,
	}
	if g.Algorithm == algorithm.TokenBucket {
		g.Burst = limit
		if burst != nil {
			g.Burst = int64(*burst)
		}
	}
	return g
}
