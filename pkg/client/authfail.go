package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/rlctl/rlctl/pkg/wire"
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

// AuthEvent is one authentication a gateway made; Outcome is AuthFailure,
// AuthSuccess or AuthExpired.
type AuthEvent = wire.AuthEvent

// AuthStatus is a client address's failed-credential lockout.
type AuthStatus = wire.AuthStatus

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

// Scopes of the failed-credential throttles: rlapi's own tokens, and the
// credentials gateways report.
const (
	AuthScopeRlapi   = "rlapi"
	AuthScopeGateway = "gateway"
)

// AuthLockout is one address's failed-credential lockout in one scope
// (AuthScopeRlapi or AuthScopeGateway).
type AuthLockout = wire.AuthLockout

// AuthLockoutList is every address with failures counted or a lockout.
type AuthLockoutList = wire.AuthLockoutList

// UnlistedScope is a scope an AuthLockoutList could not cover, with why.
type UnlistedScope = wire.UnlistedScope

// ListAuthLockouts lists the addresses locked out or counting failed
// authentications, in every scope (GET /api/auth-lockouts).
func (c *Client) ListAuthLockouts(ctx context.Context) (AuthLockoutList, error) {
	var res AuthLockoutList
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/auth-lockouts"})
	if err == nil {
		err = resp.decode(&res)
	}
	return res, wrap(err, "list auth lockouts")
}

// LiftOptions narrow LiftAuthLockout.
type LiftOptions struct {
	// Scope lifts one scope's lockout only (AuthScopeRlapi or
	// AuthScopeGateway); empty: every scope's.
	Scope string
	// DryRun reports what would be lifted, lifting nothing.
	DryRun bool
}

// LiftAuthLockout lifts address's lockout and forgets its failures on
// every replica at once (DELETE /api/auth-lockouts/{address}; admin). The
// address is an IPv4 address, an IPv6 address or an IPv6 network (an IPv6
// address lifts its network's lockout). Nothing counted for it is
// ErrNotFound. It returns what was lifted; with DryRun, what would be,
// and the report.
func (c *Client) LiftAuthLockout(ctx context.Context, address string, o LiftOptions) ([]AuthLockout, *DryRunReport, error) {
	seg, err := segment(address)
	if err != nil {
		return nil, nil, wrap(err, "lift auth lockout of %q", address)
	}
	// Not retried: a lift that landed and is sent again finds nothing to
	// lift (404).
	r := request{method: http.MethodDelete, path: "/api/auth-lockouts/" + seg, noRetry: true}
	if o.Scope != "" {
		r.query = url.Values{"scope": {o.Scope}}
	}
	WriteOptions{DryRun: o.DryRun}.apply(&r)
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, nil, wrap(err, "lift auth lockout of %q", address)
	}
	if o.DryRun {
		report, err := decodeReport(resp)
		if err != nil {
			return nil, nil, wrap(err, "lift auth lockout of %q", address)
		}
		var before AuthLockoutList
		if len(report.Before) > 0 {
			if err := json.Unmarshal(report.Before, &before); err != nil {
				return nil, nil, fmt.Errorf("lift auth lockout of %q: decode dry-run report: %w", address, err)
			}
		}
		return before.Lockouts, report, nil
	}
	var body wire.AuthLockoutLifted
	err = resp.decode(&body)
	return body.Lifted, nil, wrap(err, "lift auth lockout of %q", address)
}
