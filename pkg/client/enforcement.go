package client

import (
	"context"
	"net/http"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// GetEnforcement reads the master switch. Version 0 means nothing has set
// it yet and the default (enabled) applies.
func (c *Client) GetEnforcement(ctx context.Context) (ratelimit.Enforcement, error) {
	var e ratelimit.Enforcement
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/enforcement"})
	if err == nil {
		err = resp.decode(&e)
	}
	return e, wrap(err, "get enforcement switch")
}

// SetEnforcement switches enforcement on or off for every replica at once
// (admin token). Off, every call is allowed and nothing is counted,
// quarantine included. The change is audited with reason. It returns the
// stored switch, or for a dry run the report (and the switch as it would
// be).
func (c *Client) SetEnforcement(ctx context.Context, enabled bool, reason string, o WriteOptions) (ratelimit.Enforcement, *DryRunReport, error) {
	body := struct {
		Enabled bool   `json:"enabled"`
		Reason  string `json:"reason"`
	}{enabled, reason}
	r := request{method: http.MethodPut, path: "/api/enforcement", body: body}
	o.apply(&r)
	res, err := doPut[ratelimit.Enforcement](ctx, c, r, o, nil)
	return res.Value, res.DryRun, wrap(err, "set enforcement switch")
}
