package ratelimit

import (
	"slices"
	"time"
)

// Kinds of violation event. A new kind is one constant here and its
// severity in eventKinds: the recorder (pkg/enforce), the store, the API's
// filters and rlctl take it from there.
const (
	// EventRateLimitExceeded: an enforce limit denied calls (a throttle).
	EventRateLimitExceeded = "rate_limit_exceeded"
	// EventQuarantineDenied: a quarantine (caller, network or target)
	// denied calls.
	EventQuarantineDenied = "quarantine_denied"
	// EventLockoutStarted: an escalation lockout locked a caller out
	// (what some SIEMs call a brute_force_attempt).
	EventLockoutStarted = "lockout_started"
	// EventAuthLockoutStarted: failed credentials locked a client address
	// out.
	EventAuthLockoutStarted = "auth_lockout_started"
)

// Severities of an event, lowest first.
const (
	SeverityInfo     = "info"
	SeverityWarn     = "warn"
	SeverityHigh     = "high"
	SeverityCritical = "critical"
)

// eventKinds maps every known kind to its severity.
var eventKinds = map[string]string{
	EventRateLimitExceeded:  SeverityWarn,
	EventQuarantineDenied:   SeverityHigh,
	EventLockoutStarted:     SeverityHigh,
	EventAuthLockoutStarted: SeverityHigh,
}

// EventKinds lists the known kinds, sorted.
func EventKinds() []string {
	out := make([]string, 0, len(eventKinds))
	for k := range eventKinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// EventSeverity is kind's severity; ok is false for an unknown kind.
func EventSeverity(kind string) (severity string, ok bool) {
	severity, ok = eventKinds[kind]
	return severity, ok
}

// EventSeverities lists the severities, lowest first.
func EventSeverities() []string {
	return []string{SeverityInfo, SeverityWarn, SeverityHigh, SeverityCritical}
}

// EventSubjectOverflow is the subject of a summary row: the calls of the
// subjects a minute's caps left out of the record, for one kind and
// definition (Event.MoreSubjects says how many subjects).
const EventSubjectOverflow = "overflow:subjects"

// Event is one aggregated violation: every event of one kind for one
// subject and definition within one minute, with how many there were. The
// context fields describe the latest of them.
type Event struct {
	ID int64 `json:"id,omitempty"`
	// Minute is the start of the minute the events fell in (UTC).
	Minute   time.Time `json:"minute"`
	Kind     string    `json:"kind"`
	Severity string    `json:"severity"`
	// Subject is who the events are about: the caller (user:alice,
	// agent:bot, ip:203.0.113.7) or, for a target's own limit or
	// quarantine, the target (mcp_server:weather).
	Subject string `json:"subject"`
	// DefinitionID is the limit that denied (empty for quarantine).
	DefinitionID string `json:"definition_id,omitempty"`
	// Caller is the latest caller (the subject itself for caller limits).
	Caller     string `json:"caller,omitempty"`
	ClientIP   string `json:"client_ip,omitempty"`
	TargetType string `json:"target_type,omitempty"`
	Target     string `json:"target,omitempty"`
	// Team is the call's team, when the gateway named one (Call.Team).
	Team string `json:"team,omitempty"`
	// Path is the request path of a call that named one (a route's
	// endpoint).
	Path string `json:"path,omitempty"`
	// Tier is the group a caller limit belongs to (its definition's name).
	Tier  string `json:"tier,omitempty"`
	Limit int64  `json:"limit,omitempty"`
	// Count is how many calls the row stands for.
	Count int64 `json:"count"`
	// MoreSubjects, on a summary row (subject EventSubjectOverflow), is
	// how many subjects past the recorder's caps its calls came from
	// ("N more subjects"); 0 on a subject's own row.
	MoreSubjects int64     `json:"more_subjects,omitempty"`
	FirstSeen    time.Time `json:"first_seen"`
	LastSeen     time.Time `json:"last_seen"`
}
