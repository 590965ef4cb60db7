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
	// window wins, it is that definition.
	DefinitionID  string `json:"definition_id"`
	Axis          string `json:"axis"`
	EntityType    string `json:"entity_type"`
	WindowSeconds int    `json:"window_seconds"`
	Limit         int64  `json:"limit"`
	// Count is the gate's count after the decision.
	Count int64 `json:"count"`
	// Remaining is what is left in the window after the decision.
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"`
	Shadow    bool      `json:"shadow,omitempty"`

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
	// denial, the denying gate that resets last): what rate-limit headers
	// carry. Limit is 0 when no gate applied.
	Limit     int64     `json:"limit"`
	Remaining int64     `json:"remaining"`
	Reset     time.Time `json:"reset"`
	// RetryAfter is when the call can pass at the earliest: the latest
	// reset among the denying gates, at least one second.
	RetryAfter time.Duration `json:"retry_after"`
	// QuarantineScope is "caller" or "target" for quarantine denials.
	QuarantineScope string `json:"quarantine_scope,omitempty"`
}
