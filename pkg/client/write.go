package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rlctl/rlctl/pkg/wire"
)

// WriteOptions modify a mutation.
type WriteOptions struct {
	// IfVersion, when positive, makes the write conditional: it is sent as
	// If-Match and a stale version fails with ErrPreconditionFailed.
	IfVersion int64
	// DryRun asks the server to run the whole change and roll it back,
	// answering with a DryRunReport instead of the resource.
	DryRun bool
}

// apply adds the options to a request.
func (o WriteOptions) apply(r *request) {
	if o.IfVersion > 0 {
		r.ifMatch = strconv.FormatInt(o.IfVersion, 10)
	}
	if o.DryRun {
		if r.query == nil {
			r.query = url.Values{}
		}
		r.query.Set("dry_run", "true")
	}
}

// Actions a DryRunReport can name.
const (
	ActionCreate    = "create"
	ActionUpdate    = "update"
	ActionUnchanged = "unchanged"
	ActionDelete    = "delete"
	// An apply's quarantine/<id> lines: a subject put in or taken out of
	// quarantine.
	ActionQuarantineAdd    = "add"
	ActionQuarantineRemove = "remove"
)

// DryRunReport is what a mutation sent with WriteOptions.DryRun answers: the
// change the server would have made, computed in a transaction that was
// rolled back. Before and After are nil when the resource did not or would
// not exist.
type DryRunReport = wire.DryRunReport

// Change is one field a change sets. From and To are decoded JSON values
// (nil, bool, float64, string, []any, map[string]any).
type Change = wire.Change

// decodeReport reads a dry-run report, turning JSON nulls in Before and After
// into nil so callers can test for absence with == nil.
func decodeReport(resp *response) (*DryRunReport, error) {
	var r DryRunReport
	if err := resp.decode(&r); err != nil {
		return nil, err
	}
	if isNull(r.Before) {
		r.Before = nil
	}
	if isNull(r.After) {
		r.After = nil
	}
	return &r, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// PutResult is the outcome of an upsert.
type PutResult[T any] struct {
	// Value is the stored resource; for a dry run, the resource as it would
	// be stored (decoded from the report's After), or the zero value.
	Value T
	// Created is true when the resource did not exist before (for a dry
	// run: would not have).
	Created bool
	// DryRun is set only for dry runs.
	DryRun *DryRunReport
}

// doPut sends an upsert and shapes its answer. fill, when set, completes
// the value from the response (its ETag) where the body left gaps.
func doPut[T any](ctx context.Context, c *Client, r request, o WriteOptions, fill func(*T, *response)) (PutResult[T], error) {
	var res PutResult[T]
	resp, err := c.do(ctx, r)
	if err != nil {
		return res, err
	}
	if o.DryRun {
		rep, err := decodeReport(resp)
		if err != nil {
			return res, err
		}
		res.DryRun = rep
		res.Created = rep.Action == ActionCreate
		if rep.After != nil {
			// Best effort: the report is the answer, Value a convenience.
			_ = json.Unmarshal(rep.After, &res.Value)
		}
		return res, nil
	}
	if err := resp.decode(&res.Value); err != nil {
		return res, err
	}
	res.Created = resp.status == http.StatusCreated
	if fill != nil {
		fill(&res.Value, resp)
	}
	return res, nil
}

// doDelete sends a deletion and returns the report of a dry run, nil
// otherwise. The body of a real deletion only echoes the id.
func doDelete(ctx context.Context, c *Client, r request, o WriteOptions) (*DryRunReport, error) {
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		return decodeReport(resp)
	}
	return nil, nil
}
