package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// ReasonAuthLocked: the client address is locked out for failed
// authentications (ReportAuth); RetryAfter says for how long.
const ReasonAuthLocked = "auth-locked"

// Outcomes ReportAuth reports.
const (
	AuthFailure = "failure" // an invalid credential: counts
	AuthSuccess = "success" // a valid one: resets the count
	AuthExpired = "expired" // valid once (expired, revoked): neither
)

// AuthEvent is one authentication a gateway made.
type AuthEvent struct {
	ClientIP string `json:"client_ip"`
	// Identity is who the call claimed to be (optional, for the log).
	Identity string `json:"identity,omitempty"`
	Outcome  string `json:"outcome"`
}

// AuthStatus is an address's failed-credential state.
type AuthStatus struct {
	ClientIP string `json:"client_ip"`
	// Address is what the address is counted by: the IPv4 address, or
	// the IPv6 /64.
	Address    string `json:"address"`
	Locked     bool   `json:"locked"`
	RetryAfter int64  `json:"retry_after"` // seconds
	Started    bool   `json:"started,omitempty"`
}

// RetryAfterDuration is RetryAfter as a duration.
func (s AuthStatus) RetryAfterDuration() time.Duration {
	return time.Duration(s.RetryAfter) * time.Second
}

// ReportAuth reports an authentication (POST /api/auth-events); it needs
// a token of role enforcer or admin. It is not retried: a failure counted
// twice would lock sooner.
func (c *Client) ReportAuth(ctx context.Context, ev AuthEvent) (AuthStatus, error) {
	var res AuthStatus
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/api/auth-events", body: ev, noRetry: true})
	if err == nil {
		err = resp.decode(&res)
	}
	return res, wrap(err, "report authentication")
}

// AuthLockout asks whether clientIP is locked out (GET /api/auth-lockout),
// what a gateway asks before it verifies credentials.
func (c *Client) AuthLockout(ctx context.Context, clientIP string) (AuthStatus, error) {
	var res AuthStatus
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/auth-lockout", query: url.Values{"client_ip": {clientIP}}})
	if err == nil {
		err = resp.decode(&res)
	}
	return res, wrap(err, "auth lockout")
}
