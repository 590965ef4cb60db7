package enforce

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Call is one data-plane call to decide on. It is also the body of rlapi's
// POST /api/check (the json tags are the wire names; pkg/client's
// CheckRequest mirrors them, and a test holds the two together), and
// Normalize is the one validation of a decision request.
type Call struct {
	// Username identifies a human caller; ClientID an agent (machine
	// token). With a ClientID the caller is an agent, else a user.
	Username string `json:"username"`
	ClientID string `json:"client_id"`
	// IsAdmin is the gateway's own view (e.g. an admin role in the token).
	// Administrators listed in the store count as well.
	IsAdmin bool `json:"is_admin"`
	// TargetType is mcp_server or a2a_agent; empty means a control-plane
	// call, which is always allowed and touches nothing.
	TargetType string `json:"target_type"`
	TargetName string `json:"target_name"`
	// Tool names the MCP tool (for mcp_server) or A2A skill (for
	// a2a_agent) the call invokes, when known: tool and skill limits apply.
	Tool string `json:"tool"`
	// Cost is what the call consumes on each gate (default 1).
	Cost int64 `json:"cost"`
	// ClientIP is the client's address (IPv4 or IPv6; an IPv4-mapped
	// IPv6 address is unmapped), as the gateway resolved it from its peer
	// and the trusted proxies' forwarding headers (pkg/clientip). It
	// selects the networks whose quarantine denies the call, and makes an
	// anonymous call (no user, no client) the caller ip:<key> (IPv4 by the
	// address, IPv6 by its /64 or Options.IPv6Prefix), limited through
	// the groups of its network. Empty: no client address is known.
	ClientIP string `json:"client_ip"`

	// Team names the call's team (tenant), when the gateway knows it (for
	// example from a token claim): the groups of the team's membership
	// (subject_type team) limit the call besides the caller's own, its
	// quarantine denies it, and definitions with per: team count one
	// bucket per team. Empty: no team.
	Team string `json:"team"`
	// Descriptors are an Envoy rate-limit request's domain and
	// descriptors (descriptor.go, docs/envoy.md): each descriptor adds the
	// gates of the domain's descriptor definition it matches. A call with
	// them is decided even without a target or an identity (its caller's
	// quarantine and caller limits still apply when it has one). Not part
	// of POST /api/check's body; a pointer, so that Call stays comparable.
	Descriptors *DescriptorRequest `json:"-"`
	// Routes (route definitions, docs/api.md "Routes and tiers"). Method
	// is the HTTP method (GET, POST, ...; empty: unknown, only route
	// definitions naming no method apply) and Path the request path (a
	// query is dropped; Normalize normalizes it as RoutePath does). A call
	// with a path is limited by the route definitions matching it even
	// without a target, and an exempt route makes it allowed and counted
	// nowhere. Empty Path: no route applies.
	Method string `json:"method"`
	Path   string `json:"path"`

	// Kind is what the call invokes with Tool (ratelimit.Kind*: tool,
	// prompt, resource, completion); empty is tool. A tool or skill
	// definition naming kinds applies only to calls of those kinds.
	Kind string `json:"kind"`
}

// MaxPathBytes bounds Call.Path as sent (before normalization).
const MaxPathBytes = 8192

// MaxCost bounds what one call may take from a gate: a cost near the range
// of int64 would overflow the counters' arithmetic.
const MaxCost = 1_000_000

// FieldError is one problem with one field of a Call, named by its wire
// name (target_type, target_name, cost); Message starts with that name.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// CallError is a Call that Normalize refused: every field at fault.
type CallError struct {
	Fields []FieldError
}

// Error joins the fields' messages with "; ".
func (e *CallError) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Message
	}
	return strings.Join(msgs, "; ")
}

// Normalize checks c and returns it in canonical form: the target name
// normalized as definitions and memberships name targets. A Call it refuses
// comes back with a *CallError naming each field at fault, and with what
// could be normalized (a target name it cannot normalize is kept as given),
// so that a caller that decides anyway (an odd path on nginx's
// auth_request is decided like any other: the caller's limits apply)
// decides on the same call Check would.
func (c Call) Normalize() (Call, error) {
	var fields []FieldError
	switch c.TargetType {
	case "":
		if c.TargetName != "" {
			fields = append(fields, FieldError{Field: "target_name",
				Message: "target_name: needs target_type (mcp_server or a2a_agent); without a target the call is control plane"})
		}
	case ratelimit.EntityMCPServer, ratelimit.EntityA2AAgent:
		if name, problem := normalizeTargetName(c.TargetType, c.TargetName); problem != "" {
			fields = append(fields, FieldError{Field: "target_name", Message: "target_name: " + problem})
		} else {
			c.TargetName = name
		}
	default:
		fields = append(fields, FieldError{Field: "target_type",
			Message: fmt.Sprintf("target_type: must be mcp_server, a2a_agent or empty (got %q)", c.TargetType)})
	}
	switch {
	case c.Cost < 0:
		fields = append(fields, FieldError{Field: "cost", Message: fmt.Sprintf("cost: must not be negative (got %d)", c.Cost)})
	case c.Cost > MaxCost:
		fields = append(fields, FieldError{Field: "cost", Message: fmt.Sprintf("cost: must be at most %d (got %d)", MaxCost, c.Cost)})
	}
	if c.ClientIP != "" {
		if a, problem := normalizeClientIP(c.ClientIP); problem != "" {
			fields = append(fields, FieldError{Field: "client_ip", Message: "client_ip: " + problem})
		} else {
			c.ClientIP = a
		}
	}
	if c.Team != "" {
		if t, problem := NormalizeTeam(c.Team); problem != "" {
			fields = append(fields, FieldError{Field: "team", Message: "team: " + problem})
		} else {
			c.Team = t
		}
	}
	fields = c.normalizeRoute(fields)
	if len(fields) > 0 {
		return c, &CallError{Fields: fields}
	}
	return c, nil
}

// normalizeRoute checks and normalizes Method and Path, adding what it
// finds to fields.
func (c *Call) normalizeRoute(fields []FieldError) []FieldError {
	if c.Method != "" {
		if m, ne := ratelimit.RouteMethod("method", c.Method); ne != nil {
			fields = append(fields, FieldError{Field: "method", Message: ne.Message})
		} else {
			c.Method = m
		}
	}
	if c.Kind != "" {
		k := strings.ToLower(strings.TrimSpace(c.Kind))
		if !slices.Contains(ratelimit.Kinds(), k) {
			fields = append(fields, FieldError{Field: "kind", Message: fmt.Sprintf("kind: must be one of %s or empty (got %q)", strings.Join(ratelimit.Kinds(), ", "), c.Kind)})
		} else {
			c.Kind = k
		}
	}
	if c.Path != "" {
		switch p := strings.TrimSpace(c.Path); {
		case len(c.Path) > MaxPathBytes:
			fields = append(fields, FieldError{Field: "path", Message: fmt.Sprintf("path: must be at most %d bytes (got %d)", MaxPathBytes, len(c.Path))})
		case !strings.HasPrefix(p, "/") && !strings.Contains(p, "://"):
			fields = append(fields, FieldError{Field: "path", Message: fmt.Sprintf("path: must be a request path starting with '/' (got %q)", c.Path)})
		default:
			c.Path = RoutePath(p)
		}
	}
	return fields
}

// Reasons a decision gives.
const (
	ReasonAllowed     = "allowed"
	ReasonThrottled   = "throttled"
	ReasonQuarantined = "quarantined"
	ReasonFailOpen    = "fail-open"
	ReasonFailClosed  = "fail-closed"
	// ReasonOverloaded: the decision was shed, unmade, because this
	// replica had more decisions waiting than its counter store could
	// answer in time (ErrOverloaded). Gateways answer 503 with
	// Retry-After, and Envoy's filter applies its failure_mode_deny; a call
	// a used-up gate or a fail-closed policy refuses is refused instead,
	// so shedding never opens what the store would refuse.
	ReasonOverloaded = "overloaded"
	// ReasonEnforcementOff: the master switch is off; the call was allowed
	// without looking at any limit or quarantine.
	ReasonEnforcementOff = "enforcement-off"
	// ReasonAuthLocked: the client address is locked out for repeated
	// failed authentications (pkg/auththrottle, the Options.Guard that
	// refuses it); RetryAfter says for how long. Gateways answer it 429
	// with Retry-After, before verifying credentials.
	ReasonAuthLocked = "auth-locked"
)

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
	// LockoutRemaining, on ReasonLockedOut, is how long the escalation
	// lockout lasts still (whole seconds, at least one): the
	// X-Lockout-Remaining header.
	LockoutRemaining time.Duration `json:"lockout_remaining,omitempty"`
	// Degraded: the counter store could not be reached and the call's
	// fail policy is degrade, so this replica decided it on counters of
	// its own, each gate's limit being its share (ceil(limit / live
	// replicas); the gates' Limit say it). Reason is allowed or throttled
	// as those counters decided.
	Degraded bool `json:"degraded,omitempty"`
}

// NormalizeTeam trims a team name and says why it cannot be one: a team
// follows the rule of every subject (ratelimit.NameRule) and holds no '|',
// which separates the parts of a counter key.
func NormalizeTeam(raw string) (string, string) {
	t, fe := ratelimit.PlainName("team", raw)
	if fe == nil {
		fe = ratelimit.SpaceProblem("team", t)
	}
	if fe != nil {
		return t, strings.TrimPrefix(fe.Message, "team: ")
	}
	if strings.Contains(t, "|") {
		return t, fmt.Sprintf("must not contain '|' (got %q)", t)
	}
	return t, ""
}
