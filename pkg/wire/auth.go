package wire

import "time"

// AuthEvent is the body of POST /api/auth-events: one authentication a
// gateway made.
type AuthEvent struct {
	// ClientIP is the client's address (IPv4 or IPv6; IPv6 is counted by
	// its /64).
	ClientIP string `json:"client_ip"`
	// Identity is who the call claimed to be (a username, a client id),
	// for the lockout's event and log line; it is not counted on its own.
	Identity string `json:"identity,omitempty"`
	// Outcome is failure (counts), success (resets the count) or expired
	// (a credential that was valid once: neither).
	Outcome string `json:"outcome"`
}

// AuthStatus is a client address's failed-credential lockout, as
// POST /api/auth-events and GET /api/auth-lockout answer it.
type AuthStatus struct {
	// ClientIP is the address as normalized.
	ClientIP string `json:"client_ip"`
	// Address is what the address is counted by: the IPv4 address, or
	// the IPv6 /64.
	Address    string `json:"address"`
	Locked     bool   `json:"locked"`
	RetryAfter int64  `json:"retry_after"` // seconds; 0 when not locked
	// Started: this report locked the address (POST only).
	Started bool `json:"started,omitempty"`
}

// RetryAfterDuration is RetryAfter as a duration.
func (s AuthStatus) RetryAfterDuration() time.Duration {
	return time.Duration(s.RetryAfter) * time.Second
}

// AuthLockout is one address's failed-credential lockout in one scope.
type AuthLockout struct {
	// Address is what the address is counted by: the IPv4 address, or
	// the IPv6 network (/64 by default).
	Address string `json:"address"`
	Scope   string `json:"scope"` // rlapi or gateway
	Locked  bool   `json:"locked"`
	// RemainingSeconds is how long the lockout has left (0: not locked).
	RemainingSeconds int64 `json:"remaining_seconds"`
	// Failures is what the sliding window counts now (a lockout spends
	// the failures that took it: 0 while locked, unless more came).
	Failures int64 `json:"failures"`
}

// AuthLockoutList is the answer of GET /api/auth-lockouts.
type AuthLockoutList struct {
	Lockouts []AuthLockout `json:"lockouts"`
	// Unlisted names the scopes the server could not list, with why (the
	// gateways' when their counters are not in PostgreSQL).
	Unlisted  []UnlistedScope `json:"unlisted,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}

// UnlistedScope is a lockout scope a list could not cover, with why.
type UnlistedScope struct {
	Scope  string `json:"scope"`
	Reason string `json:"reason"`
}

// AuthLockoutLifted is the answer to DELETE /api/auth-lockouts/{address}:
// the lockouts as they were before they were lifted.
type AuthLockoutLifted struct {
	Address string        `json:"address"`
	Lifted  []AuthLockout `json:"lifted"`
}
