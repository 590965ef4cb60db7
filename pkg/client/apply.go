package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// DefaultApplyTimeout is the least time Apply allows a call, whatever
// Options.Timeout says: a state of 100,000 objects takes seconds to send,
// diff and write.
const DefaultApplyTimeout = 10 * time.Minute

// State is a desired state for Apply. A nil list is absent: the server
// leaves that kind alone entirely. A non-nil empty list is present and
// empty: with ApplyOptions.Prune the server deletes everything of that kind
// (except the quarantine sentinels). Read a file into State with
// encoding/json or a YAML decoder and the distinction follows the file: a
// missing key or null stays nil, [] becomes empty.
type State struct {
	Definitions []ratelimit.Definition `json:"definitions" yaml:"definitions"`
	Memberships []ratelimit.Membership `json:"memberships" yaml:"memberships"`
	Admins      []ratelimit.Admin      `json:"admins" yaml:"admins"`
}

// ApplyOptions modify Apply.
type ApplyOptions struct {
	// Prune deletes the objects of each present kind that the state does
	// not name. Without it, Apply only creates and updates.
	Prune bool
	// DryRun computes and reports every change in a transaction the
	// server rolls back: the report a real apply would give, nothing
	// written.
	DryRun bool
	// Quarantine lets the apply change quarantine (the quarantine groups
	// of memberships, and their reason and expiry). Without it the server
	// leaves quarantine as it is: a membership naming no quarantine group
	// keeps the subject's quarantine, one naming a quarantine group must
	// match it (else 400), and Prune never releases anyone.
	Quarantine bool
	// Timeout bounds the call; zero means the larger of Options.Timeout
	// and DefaultApplyTimeout, negative means only the context's deadline.
	Timeout time.Duration
}

// ApplyResult is what an apply did, or for a dry run would do.
type ApplyResult = wire.ApplyResult

// ApplyChange is one object an apply created, updated or deleted; Action is
// ActionCreate, ActionUpdate or ActionDelete, or for the resource type
// quarantine ActionQuarantineAdd, ActionQuarantineRemove or ActionUpdate.
type ApplyChange = wire.ApplyChange

// applyRequest is the wire form of State: pointers, so that a nil list is
// left out of the body (absent) and an empty one is sent as [].
type applyRequest struct {
	Definitions *[]ratelimit.Definition `json:"definitions,omitempty"`
	Memberships *[]ratelimit.Membership `json:"memberships,omitempty"`
	Admins      *[]ratelimit.Admin      `json:"admins,omitempty"`
	Prune       bool                    `json:"prune"`
}

// Apply makes the server's definitions, memberships and admins match
// state in one transaction (POST /api/apply): all of it, or with any
// invalid object or refusal, none of it. A validation failure is an
// *APIError whose Errors name each field by its place in state
// ("definitions[12].user_max_requests").
//
// Apply is never retried: after a lost response the state may or may not
// have been applied; call it again (it is idempotent) or run it with
// DryRun to see.
func (c *Client) Apply(ctx context.Context, state State, o ApplyOptions) (ApplyResult, error) {
	var res ApplyResult
	timeout := o.Timeout
	if timeout == 0 && c.timeout > 0 {
		timeout = max(c.timeout, DefaultApplyTimeout)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}

	body := applyRequest{Prune: o.Prune}
	if state.Definitions != nil {
		body.Definitions = &state.Definitions
	}
	if state.Memberships != nil {
		body.Memberships = &state.Memberships
	}
	if state.Admins != nil {
		body.Admins = &state.Admins
	}
	data, err := json.Marshal(body)
	if err != nil {
		return res, fmt.Errorf("apply: encode request: %w", err)
	}
	r := request{method: http.MethodPost, path: "/api/apply", noRetry: true, query: url.Values{}}
	if o.DryRun {
		r.query.Set("dry_run", "true")
	}
	if o.Quarantine {
		r.query.Set("quarantine", "true")
	}
	target, err := c.url(r)
	if err != nil {
		return res, wrap(err, "apply")
	}
	resp, err := c.attempt(ctx, r, target, data, 1)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = contextError(ctxErr, err)
		}
		return res, wrap(err, "apply")
	}
	if err := resp.decode(&res); err != nil {
		return res, wrap(err, "apply")
	}
	return res, nil
}
