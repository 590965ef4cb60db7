package enforce

import (
	"time"
)

// Call is one data-plane call to decide on.
type Call struct {
	// Username identifies a human caller; ClientID an agent (machine
	// token). With a ClientID the caller is an agent, else a user.
	Username string
	ClientID string
	// IsAdmin is the gateway's own view (e.g. an admin role in the token).
	// Administrators listed in the store count as well.
	IsAdmin bool
	// TargetType is mcp_server or a2a_agent; empty means a control-plane
	// call, which is always allowed and touches nothing.
	TargetType string
	TargetName string
	// Tool names the MCP tool (for mcp_server) or A2A skill (for
	// a2a_agent) the call invokes, when known: tool and skill limits apply.
	Tool string
	// Cost is what the call consumes on each gate (default 1).
	Cost int64
}

// Reasons a decision gives.
const (
	ReasonAllowed     = "allowed"
	ReasonThrottled   = "throttled"
	ReasonQuarantined = "quarantined"
	ReasonFailOpen    = "fail-open"
	ReasonFailClosed  = "fail-closed"
	// ReasonEnforcementOff: the master switch is off; the call was allowed
	// without looking at any limit or quarantine.
	ReasonEnforcementOff = "enforcement-off"
)

// Gate is one limit a call was checked against.
type Gate struct {
	// DefinitionID is the definition behind the gate. For the caller and
	// caller_target axes, where the most restrictive definition of each
	// window and algorithm wins, it is that definition.
	DefinitionID string `json:"definition_id"`
	Axis         string `json:"axis"`
	EntityType   string `json:"entity_type"`
	// Algorithm is how the gate counts (never empty: fixed_window by
	// default).
	Algorithm     Algorithm `json:"algorithm"`
	WindowSeconds int       `json:"window_seconds"`
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
	// the bucket's whole tokens (reference 001's r).
	Remaining int64 `json:"remaining"`
	// Reset is when the gate is back to its full limit: the window's end,
	// the end of the window after which the sliding window weighs nothing,
	// or when the bucket is full.
	Reset  time.Time `json:"reset"`
	Shadow bool      `json:"shadow,omitempty"`
	// RetryAfter, on a gate that had no room, is how long until it has
	// room for the call (exact, not rounded; 0 when it had room).
	RetryAfter time.Duration `json:"retry_after,omitempty"`

	key        string
	failClosed bool
}

// Decision is the answer for one call.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"`
	// Denied lists the enforce gates that had no room (throttled).
	Denied []Gate `json:"denied,omitempty"`
	// Shadow lists the shadow gates that would have denied.
	Shadow []Gate `json:"shadow,omitempty"`
	// Gates lists every gate checked.
	Gates []Gate `json:"gates,omitempty"`
	// Limit, Remaining and Reset describe the tightest enforce gate (on a
	// denial, the denying gate that must wait longest): what rate-limit
	// headers carry. Limit is 0 when no gate applied.
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"`
	// RetryAfter is when the call can pass at the earliest: the longest
	// wait among the denying gates (their RetryAfter: a window's end, the
	// missing tokens' time, the sliding window's first millisecond with
	// room), rounded up to whole seconds, at least one second.
	RetryAfter time.Duration `json:"retry_after"`
	// QuarantineScope is "caller" or "target" for quarantine denials.
	QuarantineScope string `json:"quarantine_scope,omitempty"`
}
