package wire

import (
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// StatusResult is the answer of GET /api/rate-limits-status: the
// definitions that apply to a caller, a target or a request.
type StatusResult struct {
	Identity    string                 `json:"identity,omitempty"`
	Username    string                 `json:"username,omitempty"`
	ClientID    string                 `json:"client_id,omitempty"`
	Team        string                 `json:"team,omitempty"`
	Groups      []string               `json:"groups"`
	Definitions []ratelimit.Definition `json:"definitions"`
	// Caller, Target and CallerTarget are Definitions' rate limits by
	// axis, as the reference answers them.
	Caller       []ratelimit.Definition `json:"caller"`
	Target       []ratelimit.Definition `json:"target"`
	CallerTarget []ratelimit.Definition `json:"caller_target"`
	// MatchedBy says, for a caller's query (username, client_id, team),
	// why each caller and caller_target definition applies, by id: the
	// membership that put the caller in its group ("user:alice",
	// "client:bot", "team:acme") or "everyone".
	MatchedBy map[string]string `json:"matched_by,omitempty"`
	// OverriddenBy names, by id, the caller and caller_target definitions
	// that apply to the caller but whose limit does not: a more specific
	// override (Definition.Override) took their bucket. The value is that
	// override's id.
	OverriddenBy map[string]string `json:"overridden_by,omitempty"`
	// Matches says which pattern of each route or tool definition matched
	// (the path's pattern, or the glob that matched the tool's name).
	Matches []StatusMatch `json:"matches,omitempty"`
}

// StatusMatch is the pattern through which a route or tool definition
// applies.
type StatusMatch struct {
	DefinitionID string `json:"definition_id"`
	Pattern      string `json:"pattern"`
}

// ApplyResult is the answer of POST /api/apply.
type ApplyResult struct {
	DryRun    bool `json:"dry_run"`
	Created   int  `json:"created"`
	Updated   int  `json:"updated"`
	Deleted   int  `json:"deleted"`
	Unchanged int  `json:"unchanged"`
	// Quarantined and Released count the quarantine changes (resource
	// type quarantine, actions add and remove).
	Quarantined int `json:"quarantined"`
	Released    int `json:"released"`
	// Changes lists the objects created, updated or deleted, sorted by
	// resource type, then id.
	Changes []ApplyChange `json:"changes"`
}

// Changed reports whether the apply changed (or, dry, would change)
// anything.
func (r ApplyResult) Changed() bool {
	return r.Created+r.Updated+r.Deleted+r.Quarantined+r.Released > 0
}

// ApplyChange is one object an apply created, updated or deleted.
type ApplyChange struct {
	// create, update or delete; for the resource type quarantine, add,
	// remove or update (its reason or expiry).
	Action string `json:"action"`
	// definition, membership, admin, or quarantine: a subject put in or
	// taken out of a quarantine group, reported apart from its membership.
	ResourceType string `json:"resource_type"`
	ID           string `json:"id"`
	// Fields lists what an update changes; empty for creates and deletes.
	Fields []Change `json:"fields,omitempty"`
}

// AuditPage is one page of GET /api/audit.
type AuditPage struct {
	Entries []ratelimit.AuditEntry `json:"entries"`
	// NextCursor continues the list; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// EventPage is one page of GET /api/events.
type EventPage struct {
	Events []ratelimit.Event `json:"events"`
	// NextCursor continues the list; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// AdminList is the answer of GET /api/rate-limit-admins.
type AdminList struct {
	Admins []ratelimit.Admin `json:"admins"`
}

// QuarantineEntry is one quarantined subject.
type QuarantineEntry struct {
	ID            string     `json:"id"`
	SubjectType   string     `json:"subject_type"`
	Subject       string     `json:"subject"`
	Reason        string     `json:"reason"`
	QuarantinedAt *time.Time `json:"quarantined_at,omitempty"`
	ExpiresAt     *time.Time `json:"expires_at,omitempty"`
	// Expired entries no longer apply; they are listed until removed.
	Expired bool `json:"expired"`
}

// QuarantineList is the answer of GET /api/quarantine.
type QuarantineList struct {
	Callers        []QuarantineEntry `json:"callers"`
	Targets        []QuarantineEntry `json:"targets"`
	CallersEnabled bool              `json:"callers_enabled"`
	TargetsEnabled bool              `json:"targets_enabled"`
}

// QuarantineRequest is the body of PUT /api/quarantine/{type}/{subject}.
type QuarantineRequest struct {
	Reason string `json:"reason,omitempty"`
	// ExpiresInSeconds lifts the quarantine after that long; zero never.
	ExpiresInSeconds int `json:"expires_in_seconds,omitempty"`
}

// Removed is the answer to DELETE /api/quarantine/{type}/{subject}.
type Removed struct {
	// Removed is false when the subject was not quarantined.
	Removed bool   `json:"removed"`
	ID      string `json:"id"`
}

// TokenList is the answer of GET /api/tokens.
type TokenList struct {
	Tokens []ratelimit.Token `json:"tokens"`
}

// CreatedToken is the answer of POST /api/tokens: the token's record and
// its secret, the only answer that ever carries one.
type CreatedToken struct {
	ratelimit.Token
	// Secret is the bearer token itself. The field cannot be called Token:
	// that name is taken by the embedded ratelimit.Token.
	Secret string `json:"token"`
}

// RevokedToken is the answer to DELETE /api/tokens/{name}.
type RevokedToken struct {
	Revoked bool   `json:"revoked"`
	Name    string `json:"name"`
}

// VersionInfo describes the server's build and its database schema.
type VersionInfo struct {
	Version string `json:"version"`
	// SchemaVersion is the database's migration version; 0 when the
	// database does not answer.
	SchemaVersion int32 `json:"schema_version"`
	SchemaLatest  int32 `json:"schema_latest"`
}

// ServerInfo is how the rlapi replica that answered is set up (GET
// /api/server): where its decisions count, which listeners and layers are
// on. Behind a load balancer each call may reach another replica; Replica
// says which one answered.
type ServerInfo struct {
	// Replica is the answering process's host name.
	Replica      string           `json:"replica"`
	CounterStore CounterStoreInfo `json:"counter_store"`
	GRPC         GRPCInfo         `json:"grpc"`
	Leases       LeaseInfo        `json:"leases"`
	FailPolicy   FailPolicyInfo   `json:"fail_policy"`
}

// FailPolicyInfo is what the replica's decisions get while its counter
// store cannot be reached.
type FailPolicyInfo struct {
	// Default is the fail policy of definitions that name none: open,
	// closed or degrade (rlapi --fail-policy).
	Default string `json:"default"`
	// Replicas is how many replicas the operator said share the counters
	// (--replicas): a degraded replica enforces limit / Replicas, rounded
	// up. 0: not known, and a definition's degrade is then decided open.
	Replicas int `json:"replicas,omitempty"`
	// Degraded: the replica decides degrade-policy gates on its own
	// counters now (the store is unreachable, or its report of what it
	// admitted meanwhile is not yet written).
	Degraded bool `json:"degraded"`
}

// CounterStoreInfo is where decisions count, and whether the store answered
// a ping just now.
type CounterStoreInfo struct {
	// Backend is postgres or redis (a Cluster: redis, with Cluster true;
	// found through Redis Sentinel: redis, with Sentinel set).
	Backend string `json:"backend"`
	Cluster bool   `json:"cluster"`
	// Sentinel is the master set whose master the sentinels name, when
	// the store finds its server through Redis Sentinel.
	Sentinel string `json:"sentinel,omitempty"`
	// Address is the store's address, without credentials.
	Address   string `json:"address"`
	Reachable bool   `json:"reachable"`
	// LatencyMS is the ping's round trip in milliseconds (when reachable).
	LatencyMS float64 `json:"latency_ms"`
	// Error is why the ping failed (when not reachable).
	Error string `json:"error,omitempty"`
}

// GRPCInfo is Envoy's rate-limit service listener of the replica.
type GRPCInfo struct {
	Enabled bool `json:"enabled"`
	// Address is the configured listen address (when enabled).
	Address string `json:"address,omitempty"`
	TLS     bool   `json:"tls"`
	// CountMode is all-or-nothing or every-descriptor (when enabled).
	CountMode string `json:"count_mode,omitempty"`
}

// LeaseInfo is the replica's leases for hot keys.
type LeaseInfo struct {
	Enabled bool `json:"enabled"`
	// LeaseTimeSeconds is how long a block of capacity is decided from.
	LeaseTimeSeconds float64 `json:"lease_time_s,omitempty"`
	// Replicas is how many replicas the operator said share the
	// counters (--lease-replicas): a block is at most limit / (2 x it).
	Replicas int `json:"replicas,omitempty"`
	// Keys is hot or all.
	Keys string `json:"keys,omitempty"`
}
