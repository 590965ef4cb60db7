package client

import (
	"context"
	"net/http"

	"github.com/rlctl/rlctl/pkg/wire"
)

// Reasons a CheckResult gives.
const (
	ReasonAllowed     = "allowed"
	ReasonThrottled   = "throttled"
	ReasonQuarantined = "quarantined"
	ReasonFailOpen    = "fail-open"
	ReasonFailClosed  = "fail-closed"
	// ReasonEnforcementOff: the master switch is off (SetEnforcement); the
	// call was allowed without any limit or quarantine applied.
	ReasonEnforcementOff = "enforcement-off"
	// ReasonLockedOut: the caller is under an escalation lockout (an
	// automatic quarantine after repeated violations); RetryAfter and
	// LockoutRemaining say for how long.
	ReasonLockedOut = "locked-out"
)

// CheckRequest is one data-plane call for Check to decide (its fields are
// documented in pkg/wire).
type CheckRequest = wire.CheckRequest

// CheckResult is the server's decision; Reason is one of the Reason
// constants. Times are Unix seconds on the wire; ResetTime and
// RetryAfterDuration convert them.
type CheckResult = wire.CheckResult

// CheckGate is one gate a call was checked against.
type CheckGate = wire.CheckGate

// Check asks the server to decide a call (POST /api/check), which takes the
// call's cost from every gate when it is allowed. Every decision, allowed or
// not, is a nil error: look at Allowed and Reason. It needs a token of role
// enforcer or admin.
//
// Check is never retried: after a lost answer the call may or may not have
// been counted, and a retry would count it twice. A gateway that cannot
// reach rlapi applies its own fail policy.
func (c *Client) Check(ctx context.Context, req CheckRequest) (CheckResult, error) {
	var res CheckResult
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/api/check", target: c.checkURL,
		body: req, noRetry: true})
	if err == nil {
		err = resp.decode(&res)
	}
	return res, wrap(err, "check")
}
