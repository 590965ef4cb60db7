package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/pkg/wire"
)

// AuditFilter narrows ListAudit; zero fields do not filter.
type AuditFilter struct {
	// Since keeps entries at or after this time.
	Since time.Time
	// Resource is a resource type ("definition") or one resource
	// ("definition/<id>").
	Resource string
	Actor    string
	Limit    int
	Cursor   string
	// After returns the entries newer than this entry id, oldest first,
	// for following the log.
	After int64
}

// AuditPage is one page of the audit log.
type AuditPage = wire.AuditPage

// ListAudit returns one page of the audit log.
func (c *Client) ListAudit(ctx context.Context, f AuditFilter) (AuditPage, error) {
	var page AuditPage
	q := url.Values{}
	if !f.Since.IsZero() {
		q.Set("since", f.Since.UTC().Format(time.RFC3339Nano))
	}
	setNonEmpty(q, "resource", f.Resource)
	setNonEmpty(q, "actor", f.Actor)
	setPaging(q, f.Limit, f.Cursor)
	if f.After > 0 {
		q.Set("after", strconv.FormatInt(f.After, 10))
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/audit", query: q})
	if err == nil {
		err = resp.decode(&page)
	}
	return page, wrap(err, "list audit")
}
