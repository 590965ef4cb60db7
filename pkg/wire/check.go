package wire

import "time"

// CheckRequest is one data-plane call for POST /api/check to decide. Its
// JSON fields are those of enforce.Call, which rlapi decodes the body into
// (a test holds the two together).
type CheckRequest struct {
	// Username is a human caller, ClientID an agent (a machine token's
	// client id); with a ClientID the caller is an agent.
	Username string `json:"username,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	// IsAdmin is the gateway's own view that the caller is an
	// administrator: caller gates and caller quarantine do not apply.
	IsAdmin bool `json:"is_admin,omitempty"`
	// TargetType is ratelimit.EntityMCPServer or ratelimit.EntityA2AAgent;
	// empty makes the call control plane (always allowed, nothing counted).
	TargetType string `json:"target_type,omitempty"`
	TargetName string `json:"target_name,omitempty"`
	// Tool is the MCP tool or A2A skill the call invokes, when known.
	Tool string `json:"tool,omitempty"`
	// Cost is what the call takes from each gate; zero means 1.
	Cost int64 `json:"cost,omitempty"`
	// ClientIP is the client's address as the gateway resolved it
	// (pkg/clientip): network quarantine applies, and an anonymous call
	// (no Username, no ClientID) is the caller ip:<key>, limited through
	// its network's groups.
	ClientIP string `json:"client_ip,omitempty"`
	// Team is the call's team (tenant), when the gateway knows it: the
	// team's groups limit the call, per: team definitions count one
	// bucket per team, its quarantine denies it.
	Team string `json:"team,omitempty"`
	// Method and Path are the HTTP request's method and path: the route
	// definitions matching them apply (even without a target), and an
	// exempt route makes the call allowed and counted nowhere.
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	// Kind is what Tool names: tool (the default), prompt, resource or
	// completion; tool definitions naming kinds apply only to theirs.
	Kind string `json:"kind,omitempty"`
}

// CheckResult is the answer of POST /api/check: the decision in wire
// units. Times are Unix seconds; ResetTime and RetryAfterDuration convert
// them.
type CheckResult struct {
	Allowed bool   `json:"allowed"`
	Reason  string `json:"reason"` // allowed, throttled, quarantined, fail-open, ...
	// Limit, Remaining and Reset describe the tightest gate (on a
	// throttle, the denying gate that resets last), as the rate-limit
	// headers carry them; Limit is 0 when no gate applied.
	Limit     int64 `json:"limit"`
	Remaining int64 `json:"remaining"`
	Reset     int64 `json:"reset"`
	// RetryAfter is the wait in seconds before the call can pass; 0 when
	// it passed or is quarantined (waiting will not help).
	RetryAfter      int64       `json:"retry_after"`
	Gates           []CheckGate `json:"gates"`
	QuarantineScope string      `json:"quarantine_scope,omitempty"` // "caller" or "target"
	// LockoutRemaining is, for reason locked-out, the seconds the
	// escalation lockout lasts still (X-Lockout-Remaining).
	LockoutRemaining int64 `json:"lockout_remaining,omitempty"`
	// Degraded: the counter store was unreachable and the replica decided
	// the call on its share of the limits (fail policy degrade); Limit
	// and the gates' limits are that share.
	Degraded bool `json:"degraded,omitempty"`
}

// ResetTime is Reset as a time; the zero time when no gate applied.
func (r CheckResult) ResetTime() time.Time { return unixTime(r.Reset) }

// RetryAfterDuration is RetryAfter as a duration.
func (r CheckResult) RetryAfterDuration() time.Duration {
	return time.Duration(r.RetryAfter) * time.Second
}

// CheckGate is one gate a call was checked against.
type CheckGate struct {
	DefinitionID  string `json:"definition_id"`
	Axis          string `json:"axis"`
	EntityType    string `json:"entity_type"`
	WindowSeconds int    `json:"window_seconds"`
	Limit         int64  `json:"limit"`
	// Count is the gate's count after the decision.
	Count     int64 `json:"count"`
	Remaining int64 `json:"remaining"`
	Reset     int64 `json:"reset"` // Unix seconds
	Shadow    bool  `json:"shadow"`
	// MatchedBy says why a caller or caller_target definition applied:
	// the membership that put the caller in its group ("user:alice",
	// "client:bot", "team:acme", "network:10.0.0.0/8") or "everyone".
	// Empty for target gates.
	MatchedBy string `json:"matched_by,omitempty"`
	// Overrides names the definitions the gate's definition, an override,
	// took the caller's bucket from: less specific ones whose limits would
	// otherwise have applied. Empty when it overrode none.
	Overrides []string `json:"overrides,omitempty"`
	// Matched and Dimension say why a route or tool gate applies: the
	// pattern the call matched, and what the bucket is kept per (all, ip,
	// user, agent, team, ...).
	Matched   string `json:"matched,omitempty"`
	Dimension string `json:"dimension,omitempty"`
}

// ResetTime is Reset as a time.
func (g CheckGate) ResetTime() time.Time { return unixTime(g.Reset) }

func unixTime(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0)
}
