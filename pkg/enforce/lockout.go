package enforce

import (
	"github.com/rlctl/rlctl/pkg/enforce/internal/eventlog"
	snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"
)

// Lockouts as the core reads them. An escalation lockout (written by
// pkg/enforce/escalation, an observer of decisions, through
// Source.LockOut) is a quarantine of a caller (user or client) with an
// expiry and a reason starting with LockoutReasonPrefix: the core answers
// it ReasonLockedOut (429, Retry-After, X-Lockout-Remaining) rather than
// as a quarantine (403), and it holds whatever the callers' quarantine
// sentinel says.
//
// An anonymous caller (ip:<key>) is locked out as a quarantine of its
// network subject (LockoutSubject): the address's /32, or its IPv6 prefix
// (Options.IPv6Prefix, /64 by default), network:203.0.113.7/32. Such a
// lockout refuses anonymous calls from the address only (a user or client
// calling from it is its own caller), and a network membership that holds
// nothing but a lockout is kept apart from the networks' longest-prefix
// match: it never hides the groups or the quarantine of an operator's
// wider network holding the address, even once it has expired.

// LockoutReasonPrefix starts the reason of every escalation lockout; a
// caller quarantine with an expiry whose reason starts with it is answered
// ReasonLockedOut (429, Retry-After, X-Lockout-Remaining) rather than as a
// quarantine (403).
const LockoutReasonPrefix = snapshots.LockoutReasonPrefix

// ReasonLockedOut: the caller is locked out by an escalation lockout;
// RetryAfter and LockoutRemaining say for how long.
const ReasonLockedOut = "locked-out"

// EventLockoutStarted is the event attribute of the log line an
// escalation lockout writes when it starts.
const EventLockoutStarted = eventlog.LockoutStarted
