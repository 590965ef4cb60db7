// Package ratelimit is the shared vocabulary of rlctl: the shapes of limit
// definitions, memberships, administrators, tokens and audit entries, and the
// identifiers that name them. It holds no rules (those live in
// internal/validate) and no I/O, so the API server, the store, the SDK and the
// enforcement package can all speak it without depending on one another.
package ratelimit

import (
	"encoding/json"
	"time"
)

// Axes a definition can apply to.
const (
	AxisCaller       = "caller"        // one bucket per caller, all targets pooled
	AxisTarget       = "target"        // one bucket per target, all callers pooled
	AxisCallerTarget = "caller_target" // one bucket per (caller, target) pair
	AxisQuarantine   = "quarantine"    // the two kill-switch sentinels; no rate
)

// Entity types.
const (
	EntityGroup       = "group"
	EntityMCPServer   = "mcp_server"
	EntityA2AAgent    = "a2a_agent"
	EntityMCPTool     = "mcp_tool"
	EntityA2ASkill    = "a2a_skill"
	EntityServerGroup = "server_group"
	// EntityRoute is a tier of HTTP routes (target axis): a named set of
	// path patterns, optionally narrowed to methods, with limits per
	// caller dimension (Definition.Paths, Methods, IPMaxRequests).
	EntityRoute = "route"
	// EntityUser, EntityClient and EntityTeam are caller and caller_target
	// definitions that select one subject by name, without membership: a
	// limit for one user, one client (agent) or one team. They are
	// overrides (Definition.Override) by nature.
	EntityUser   = "user"
	EntityClient = "client"
	EntityTeam   = "team"
)

// IsSubjectEntity reports whether entityType selects one subject by name
// (EntityUser, EntityClient, EntityTeam) rather than a group.
func IsSubjectEntity(entityType string) bool {
	return entityType == EntityUser || entityType == EntityClient || entityType == EntityTeam
}

// Subject types of memberships and admins.
const (
	SubjectUser   = "user"
	SubjectClient = "client"
	SubjectServer = "server"
	SubjectAgent  = "agent"
	// SubjectNetwork is a network of client addresses, named by its CIDR
	// in canonical masked form (10.1.0.0/16, 2001:db8::/48): a call takes
	// the groups and the quarantine of the most specific network holding
	// its client IP.
	SubjectNetwork = "network"
	// SubjectTeam is a team (tenant) a call names (Call.Team, for example
	// from a token claim the gateway passes): its groups limit every call
	// of the team, its quarantine denies them.
	SubjectTeam = "team"
)

// The reserved quarantine groups and their sentinel definitions. Putting a
// subject in one of these groups blocks it; disabling the sentinel turns that
// half of quarantine off for everyone.
const (
	GroupQuarantineCallers = "quarantine-callers"
	GroupQuarantineTargets = "quarantine-targets"

	SentinelCallers = "quarantine:group:quarantine-callers:1"
	SentinelTargets = "quarantine:group:quarantine-targets:1"
)

// Algorithms a definition counts with (Definition.Algorithm). An empty
// algorithm is AlgorithmFixedWindow: every definition stored before
// algorithms existed keeps its meaning.
const (
	// AlgorithmFixedWindow counts per window aligned on the Unix epoch.
	AlgorithmFixedWindow = "fixed_window"
	// AlgorithmSlidingWindow approximates "at most the limit in any
	// window of that length" with a weighted two-window counter.
	AlgorithmSlidingWindow = "sliding_window"
	// AlgorithmTokenBucket refills at the limit per window (the sustained
	// rate) up to a burst (the capacity, defaulting to the limit).
	AlgorithmTokenBucket = "token_bucket"
)

// Algorithms lists the algorithms, the default first.
func Algorithms() []string {
	return []string{AlgorithmFixedWindow, AlgorithmSlidingWindow, AlgorithmTokenBucket}
}

// What one bucket of a caller definition counts (Definition.Per). An
// empty Per is PerCaller: every definition stored before Per existed
// keeps its meaning.
const (
	// PerCaller: one bucket per caller (user:<name>, agent:<client id>,
	// ip:<key> for an anonymous call); the enforce definitions of one
	// window and algorithm share it, the most restrictive one's limit
	// applying.
	PerCaller = "caller"
	// PerIP: one bucket per client IP (IPv6 by its prefix), whoever calls
	// from it; a call without a client IP is not gated.
	PerIP = "ip"
	// PerTeam: one bucket per team (Call.Team); a call without a team is
	// not gated.
	PerTeam = "team"
	// PerShared: one bucket for the definition (per target on the
	// caller_target axis), shared by every caller it selects.
	PerShared = "shared"
)

// Pers lists the values of Definition.Per, the default first.
func Pers() []string { return []string{PerCaller, PerIP, PerTeam, PerShared} }

// PerOrDefault is the definition's Per, PerCaller when it names none.
func (d Definition) PerOrDefault() string {
	if d.Per == "" {
		return PerCaller
	}
	return d.Per
}

// Lease modes of a definition (Definition.Lease): whether an enforcer
// with leases on (rlapi --lease-time, the pkg/enforce/lease layer) may
// decide the definition's gates from a block of capacity taken from the
// shared counter (docs/scaling.md, "Leases"). An empty Lease is
// LeaseAuto: every definition stored before the field existed keeps its
// meaning. Without leases on the enforcer, nothing is leased, whatever
// the mode.
const (
	// LeaseAuto: the enforcer decides (hot keys, or every key with
	// --lease-keys all).
	LeaseAuto = "auto"
	// LeaseNever: the definition's gates are never leased, even hot and
	// even with --lease-keys all: every call is counted on the shared
	// counter.
	LeaseNever = "never"
	// LeaseAlways: the definition's gates are leased from the first call,
	// hot or not (a gate whose block would be 0, capacity below 2 ×
	// replicas, still is not).
	LeaseAlways = "always"
)

// Leases lists the values of Definition.Lease, the default first.
func Leases() []string { return []string{LeaseAuto, LeaseNever, LeaseAlways} }

// LeaseOrDefault is the definition's Lease, LeaseAuto when it names none.
func (d Definition) LeaseOrDefault() string {
	if d.Lease == "" {
		return LeaseAuto
	}
	return d.Lease
}

// Fail policies of a definition (Definition.FailPolicy): what an
// enforcer decides for the definition's gates while the counter store
// cannot be reached. An empty FailPolicy follows the enforcer's default
// (rlapi --fail-policy), except on a definition stored with FailClosed,
// which is FailPolicyClosed: every definition stored before the field
// existed keeps its meaning.
const (
	// FailPolicyOpen: the call passes, uncounted.
	FailPolicyOpen = "open"
	// FailPolicyClosed: the call is refused.
	FailPolicyClosed = "closed"
	// FailPolicyDegrade: each replica enforces its share of the limit,
	// ceil(limit / live replicas) per window, on counters in its own
	// memory, and reports what it admitted to the shared counters when
	// they are back (docs/operations.md, "Degraded mode").
	FailPolicyDegrade = "degrade"
)

// FailPolicies lists the values of Definition.FailPolicy.
func FailPolicies() []string { return []string{FailPolicyOpen, FailPolicyClosed, FailPolicyDegrade} }

// FailPolicyOf is the definition's own fail policy: FailPolicy, or
// FailPolicyClosed for a definition marked FailClosed that names none, or
// "" when it leaves the choice to the enforcer's default.
func (d Definition) FailPolicyOf() string {
	if d.FailPolicy == "" && d.FailClosed {
		return FailPolicyClosed
	}
	return d.FailPolicy
}

// Kinds of calls (enforce.Call.Kind, Definition.Kinds): what an MCP call
// invokes.
const (
	KindTool       = "tool"
	KindPrompt     = "prompt"
	KindResource   = "resource"
	KindCompletion = "completion"
)

// Kinds lists the kinds of calls.
func Kinds() []string { return []string{KindTool, KindPrompt, KindResource, KindCompletion} }

// Tool scopes (Definition.ToolScope): what a tool or
// skill definition's bucket is kept per.
const (
	ToolScopeGlobal        = "global"         // one bucket for the definition (the default)
	ToolScopeTool          = "tool"           // a bucket per tool it matches, callers pooled
	ToolScopePrincipal     = "principal"      // a bucket per caller, the tools it matches pooled
	ToolScopePrincipalTool = "principal_tool" // a bucket per caller per tool
)

// ToolScopes lists the tool scopes, the default first.
func ToolScopes() []string {
	return []string{ToolScopeGlobal, ToolScopeTool, ToolScopePrincipal, ToolScopePrincipalTool}
}

// Modes of a definition.
const (
	ModeEnforce = "enforce" // deny when over the limit
	ModeShadow  = "shadow"  // count and report, never deny
)

// Token roles.
const (
	RoleAdmin    = "admin"    // everything
	RoleViewer   = "viewer"   // read-only
	RoleEnforcer = "enforcer" // only the decision endpoints
)

// Definition is one rate-limit rule. Its identity is
// <axis>:<entity_type>:<name>:<window_seconds> (see DefinitionID); every other
// field may change without changing the identity.
//
// Limits are pointers because "absent" and "zero" differ: a group without
// agent_max_requests does not gate agents at all. The algorithm is not part
// of the identity: changing it changes how the definition counts, not which
// definition it is.
type Definition struct {
	ID               string `json:"id,omitempty" yaml:"id,omitempty"`
	Axis             string `json:"axis" yaml:"axis"`
	EntityType       string `json:"entity_type" yaml:"entity_type"`
	Name             string `json:"name" yaml:"name"`
	WindowSeconds    int    `json:"window_seconds" yaml:"window_seconds"`
	MaxRequests      *int   `json:"max_requests,omitempty" yaml:"max_requests,omitempty"`
	UserMaxRequests  *int   `json:"user_max_requests,omitempty" yaml:"user_max_requests,omitempty"`
	AgentMaxRequests *int   `json:"agent_max_requests,omitempty" yaml:"agent_max_requests,omitempty"`
	// Algorithm is how the limits count (Algorithm*; empty is
	// fixed_window).
	Algorithm string `json:"algorithm,omitempty" yaml:"algorithm,omitempty"`
	// Burst, UserBurst and AgentBurst are a token bucket's capacities
	// beside MaxRequests, UserMaxRequests and AgentMaxRequests (each
	// defaulting to its limit); only token_bucket definitions have them.
	Burst      *int     `json:"burst,omitempty" yaml:"burst,omitempty"`
	UserBurst  *int     `json:"user_burst,omitempty" yaml:"user_burst,omitempty"`
	AgentBurst *int     `json:"agent_burst,omitempty" yaml:"agent_burst,omitempty"`
	Members    []string `json:"members,omitempty" yaml:"members,omitempty"`

	// Who a caller definition selects and how its buckets are keyed
	// (limits for everyone, teams and shared buckets; only on
	// the caller and caller_target axes).
	//
	// Everyone selects every caller without membership: its user limit
	// gates every user and every anonymous caller (keyed by its client
	// IP), its agent limit every agent.
	Everyone bool `json:"everyone,omitempty" yaml:"everyone,omitempty"`
	// Per is what one bucket counts (Per*; empty is PerCaller): each
	// caller its own, each client IP, each team, or one bucket shared by
	// every caller the definition selects.
	Per string `json:"per,omitempty" yaml:"per,omitempty"`

	// Override makes the definition take precedence over the less
	// specific definitions that share its bucket (one axis, window and
	// algorithm of a caller), raising or lowering their limit: a subject
	// definition (user, client, team) outranks the group definitions of
	// memberships, which outrank those reached through a team, then a
	// network, then everyone. Without it, the most restrictive definition
	// of a bucket applies, as it always has. Definitions selecting one
	// subject (IsSubjectEntity) are overrides whatever the field says.
	Override bool `json:"override,omitempty" yaml:"override,omitempty"`

	// Lease says whether an enforcer with leases on may decide the
	// definition's gates locally from a leased block (Lease*; empty is
	// LeaseAuto, the enforcer decides). Where several caller definitions
	// share one bucket, never on any of them wins over always, which wins
	// over auto.
	Lease string `json:"lease,omitempty" yaml:"lease,omitempty"`

	// CountsTowardLockout says whether a throttle by the definition counts
	// as the caller's violation toward an escalation lockout (rlapi
	// --lockout-after). Unset, the bucket decides: one kept for the caller
	// alone counts (caller, caller_target, per ip, a route's or tool's
	// per-caller buckets), one others share does not (a target's limit, a
	// route's all bucket, per team, shared, descriptors), so that another
	// caller's traffic can never lock this one out.
	CountsTowardLockout *bool `json:"counts_toward_lockout,omitempty" yaml:"counts_toward_lockout,omitempty"`

	// Scope is the reference's field for the quarantine axis ("caller" or
	// "target"). It is derived from the sentinel name and accepted on input
	// only when it agrees with it.
	Scope string `json:"scope,omitempty" yaml:"scope,omitempty"`
	// FailClosed is the older spelling of FailPolicy closed, kept so
	// that definitions, scripts and files written before FailPolicy
	// existed keep their meaning; true with a FailPolicy other than
	// closed is refused.
	FailClosed bool `json:"fail_closed" yaml:"fail_closed"`
	// FailPolicy is what an enforcer decides for the definition's gates
	// while the counter store cannot be reached (FailPolicy*; empty: the
	// enforcer's default, see FailPolicyOf).
	FailPolicy  string `json:"fail_policy,omitempty" yaml:"fail_policy,omitempty"`
	Enabled     bool   `json:"enabled" yaml:"enabled"`
	Mode        string `json:"mode,omitempty" yaml:"mode,omitempty"`
	Description string `json:"description,omitempty" yaml:"description,omitempty"`

	// DescriptorFields are Envoy descriptor definitions' own fields
	// (descriptor.go); zero on every other definition.
	DescriptorFields `yaml:",inline"`
	// Routes and tiers (entity_type route only; see docs/api.md,
	// "Routes and tiers"). A route definition is a tier: it applies to a
	// call whose normalized path matches one of Paths (a '*' matches any
	// run of characters, '/' included) and, when Methods is not empty,
	// whose method is one of them. MaxRequests (with Burst) is one bucket
	// all callers share; IPMaxRequests, UserMaxRequests and
	// AgentMaxRequests (with their bursts) give each client address, user
	// or agent its own bucket per tier. Exempt marks paths that are never
	// limited: a call to one is allowed and counted nowhere.
	Methods       []string `json:"methods,omitempty" yaml:"methods,omitempty"`
	Paths         []string `json:"paths,omitempty" yaml:"paths,omitempty"`
	Exempt        bool     `json:"exempt,omitempty" yaml:"exempt,omitempty"`
	IPMaxRequests *int     `json:"ip_max_requests,omitempty" yaml:"ip_max_requests,omitempty"`
	IPBurst       *int     `json:"ip_burst,omitempty" yaml:"ip_burst,omitempty"`
	// TeamMaxRequests (with TeamBurst) gives each team its own bucket per
	// tier, which all the team's callers share; a call without a team is
	// not gated by it.
	TeamMaxRequests *int `json:"team_max_requests,omitempty" yaml:"team_max_requests,omitempty"`
	TeamBurst       *int `json:"team_burst,omitempty" yaml:"team_burst,omitempty"`

	// Tools and skills (entity_type mcp_tool and a2a_skill only; see
	// docs/api.md, "Tool globs, kinds and scopes"). The name may be a glob
	// ('*' matches any run of characters: github:*, *:delete_*). Kinds
	// narrows the definition to calls of those kinds (Kind*; empty: every
	// kind). ToolScope says what its max_requests bucket is kept per
	// (ToolScope*; empty is global, one bucket for the definition).
	Kinds     []string `json:"kinds,omitempty" yaml:"kinds,omitempty"`
	ToolScope string   `json:"tool_scope,omitempty" yaml:"tool_scope,omitempty"`

	// Read-only fields, set by the server. They are accepted on input (so
	// a definition read with GET can be sent back with PUT) and ignored.
	Version   int64      `json:"version,omitempty" yaml:"version,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty" yaml:"created_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty" yaml:"updated_at,omitempty"`
	UpdatedBy string     `json:"updated_by,omitempty" yaml:"updated_by,omitempty"`
}

// Key returns the definition's identifier built from its body.
func (d Definition) Key() string {
	name := d.Name
	if name == "" && d.EntityType == EntityDescriptor && d.Domain != "" {
		name = DescriptorName(d.Domain, d.Descriptor) // given in structured form
	}
	return DefinitionID(d.Axis, d.EntityType, name, d.WindowSeconds)
}

// Overrides reports whether the definition takes precedence over less
// specific ones on its bucket: marked Override, or selecting one subject.
func (d Definition) Overrides() bool { return d.Override || IsSubjectEntity(d.EntityType) }

// AlgorithmOrDefault is the definition's algorithm, fixed_window when it
// names none.
func (d Definition) AlgorithmOrDefault() string {
	if d.Algorithm == "" {
		return AlgorithmFixedWindow
	}
	return d.Algorithm
}

// IsSentinel reports whether id names one of the two quarantine sentinels.
func IsSentinel(id string) bool {
	return id == SentinelCallers || id == SentinelTargets
}

// Membership maps one subject (a caller or a target) to its rate-limit groups.
// Quarantine is membership of a reserved group, with a reason and an optional
// expiry.
type Membership struct {
	ID          string   `json:"id,omitempty" yaml:"id,omitempty"`
	SubjectType string   `json:"subject_type" yaml:"subject_type"`
	Subject     string   `json:"subject" yaml:"subject"`
	Groups      []string `json:"groups" yaml:"groups"`

	QuarantineReason    string     `json:"quarantine_reason,omitempty" yaml:"quarantine_reason,omitempty"`
	QuarantinedAt       *time.Time `json:"quarantined_at,omitempty" yaml:"quarantined_at,omitempty"`
	QuarantineExpiresAt *time.Time `json:"quarantine_expires_at,omitempty" yaml:"quarantine_expires_at,omitempty"`

	Version   int64      `json:"version,omitempty" yaml:"version,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty" yaml:"created_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty" yaml:"updated_at,omitempty"`
}

// Key returns the membership's identifier built from its body.
func (m Membership) Key() string { return MembershipID(m.SubjectType, m.Subject) }

// HasGroup reports whether the membership names group g.
func (m Membership) HasGroup(g string) bool {
	for _, have := range m.Groups {
		if have == g {
			return true
		}
	}
	return false
}

// Admin is a gateway identity with administrator privileges: it bypasses caller
// limits and can never be quarantined.
type Admin struct {
	SubjectType string     `json:"subject_type" yaml:"subject_type"`
	Subject     string     `json:"subject" yaml:"subject"`
	Note        string     `json:"note,omitempty" yaml:"note,omitempty"`
	CreatedAt   *time.Time `json:"created_at,omitempty" yaml:"created_at,omitempty"`
	CreatedBy   string     `json:"created_by,omitempty" yaml:"created_by,omitempty"`
}

// Key returns the admin's identifier, <subject_type>:<subject>.
func (a Admin) Key() string { return MembershipID(a.SubjectType, a.Subject) }

// Token describes an API token. The secret itself is never stored; only its
// SHA-256 is.
type Token struct {
	Name       string     `json:"name" yaml:"name"`
	Role       string     `json:"role" yaml:"role"`
	CreatedAt  time.Time  `json:"created_at" yaml:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at,omitempty" yaml:"expires_at,omitempty"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty" yaml:"last_used_at,omitempty"`
	RevokedAt  *time.Time `json:"revoked_at,omitempty" yaml:"revoked_at,omitempty"`
}

// AuditEntry records one successful mutation.
type AuditEntry struct {
	ID           int64           `json:"id" yaml:"id"`
	Time         time.Time       `json:"time" yaml:"time"`
	Actor        string          `json:"actor" yaml:"actor"`
	Action       string          `json:"action" yaml:"action"`
	ResourceType string          `json:"resource_type" yaml:"resource_type"`
	ResourceID   string          `json:"resource_id" yaml:"resource_id"`
	Before       json.RawMessage `json:"before,omitempty" yaml:"before,omitempty"`
	After        json.RawMessage `json:"after,omitempty" yaml:"after,omitempty"`
	RequestID    string          `json:"request_id,omitempty" yaml:"request_id,omitempty"`
}

// What a definition's throttles do to an escalation lockout (Lockout).
const (
	LockoutCounts    = "counts"     // every throttle is the caller's violation
	LockoutNever     = "never"      // no throttle is
	LockoutPerCaller = "per-caller" // a route's per-user and per-agent buckets count, its per-IP ones for anonymous callers; its all and team buckets do not
	LockoutAnonymous = "anonymous"  // per client address: counts for anonymous callers (whose identity is the address), not for a user or agent behind it
)

// Lockout says whether the definition's throttles count toward a caller's
// escalation lockout: its CountsTowardLockout when set, else by its
// buckets, as enforcers decide (pkg/enforce/escalation, countsTowardLockout):
// buckets kept for the caller alone count, buckets other callers share
// do not. "" for the quarantine axis, which throttles nothing.
func (d Definition) Lockout() string {
	switch {
	case d.Axis == AxisQuarantine:
		return ""
	case d.CountsTowardLockout != nil && *d.CountsTowardLockout:
		return LockoutCounts
	case d.CountsTowardLockout != nil:
		return LockoutNever
	case d.EntityType == EntityRoute:
		return LockoutPerCaller
	case d.EntityType == EntityMCPTool || d.EntityType == EntityA2ASkill:
		if d.ToolScope == ToolScopePrincipal || d.ToolScope == ToolScopePrincipalTool {
			return LockoutCounts
		}
		return LockoutNever
	case d.Axis == AxisCaller || d.Axis == AxisCallerTarget:
		switch d.PerOrDefault() {
		case PerCaller:
			return LockoutCounts
		case PerIP:
			return LockoutAnonymous
		}
	}
	return LockoutNever
}
