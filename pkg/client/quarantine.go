package client

import (
	"context"
	"net/http"

	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// QuarantineEntry is one quarantined subject.
type QuarantineEntry = wire.QuarantineEntry

// QuarantineList is every quarantined caller and target.
type QuarantineList = wire.QuarantineList

// QuarantineRequest is a quarantine's reason and lifetime.
type QuarantineRequest = wire.QuarantineRequest

// QuarantineResult is the outcome of Quarantine.
type QuarantineResult struct {
	// Entry is the quarantine as stored; zero for a dry run.
	Entry QuarantineEntry
	// Created is true when the subject was not quarantined before (for a
	// dry run: when the report's action is "create").
	Created bool
	// DryRun is set only for dry runs.
	DryRun *DryRunReport
}

// ListQuarantine returns every quarantined subject.
func (c *Client) ListQuarantine(ctx context.Context) (QuarantineList, error) {
	var l QuarantineList
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limit-quarantine"})
	if err == nil {
		err = resp.decode(&l)
	}
	return l, wrap(err, "list quarantine")
}

// Quarantine blocks a subject, or updates the reason and expiry of an
// existing quarantine. Quarantining an administrator is ErrAdminQuarantine
// (an ErrForbidden). It is a POST and so never retried: check with
// ListQuarantine after a network failure.
func (c *Client) Quarantine(ctx context.Context, subjectType, subject string, q QuarantineRequest, o WriteOptions) (QuarantineResult, error) {
	var res QuarantineResult
	id := ratelimit.MembershipID(subjectType, subject)
	seg, err := segment(id)
	if err != nil {
		return res, wrap(err, "quarantine %q", id)
	}
	r := request{method: http.MethodPost, path: "/api/rate-limit-quarantine/" + seg, body: q}
	o.apply(&r)
	resp, err := c.do(ctx, r)
	if err != nil {
		return res, wrap(err, "quarantine %q", id)
	}
	if o.DryRun {
		res.DryRun, err = decodeReport(resp)
		if res.DryRun != nil {
			res.Created = res.DryRun.Action == ActionCreate
		}
		return res, wrap(err, "quarantine %q", id)
	}
	res.Created = resp.status == http.StatusCreated
	return res, wrap(resp.decode(&res.Entry), "quarantine %q", id)
}

// Unquarantine lifts a subject's quarantine. removed is false when it was
// not quarantined; for a dry run it says whether anything would change.
func (c *Client) Unquarantine(ctx context.Context, subjectType, subject string, o WriteOptions) (removed bool, report *DryRunReport, err error) {
	id := ratelimit.MembershipID(subjectType, subject)
	seg, err := segment(id)
	if err != nil {
		return false, nil, wrap(err, "unquarantine %q", id)
	}
	r := request{method: http.MethodDelete, path: "/api/rate-limit-quarantine/" + seg}
	o.apply(&r)
	resp, err := c.do(ctx, r)
	if err != nil {
		return false, nil, wrap(err, "unquarantine %q", id)
	}
	if o.DryRun {
		report, err = decodeReport(resp)
		if err != nil {
			return false, nil, wrap(err, "unquarantine %q", id)
		}
		return report.Changed(), report, nil
	}
	var body wire.Removed
	err = resp.decode(&body)
	return body.Removed, nil, wrap(err, "unquarantine %q", id)
}
