package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/pkg/wire"
)

// EventFilter narrows ListEvents; zero fields do not filter.
type EventFilter struct {
	// Subject is a caller (user:alice, agent:bot, ip:203.0.113.7) or a
	// target (mcp_server:weather).
	Subject      string
	DefinitionID string
	// Kind is one of ratelimit.EventKinds; Severity one of
	// ratelimit.EventSeverities.
	Kind     string
	Severity string
	// Since and Until bound the rows' minute: Since <= minute < Until.
	Since, Until time.Time
	Limit        int
	Cursor       string
	// After returns the rows newer than this event id, oldest first, for
	// following the record.
	After int64
}

// EventPage is one page of the record of violations.
type EventPage = wire.EventPage

// ListEvents returns one page of the record of violations (GET
// /api/rate-limit-events).
func (c *Client) ListEvents(ctx context.Context, f EventFilter) (EventPage, error) {
	var page EventPage
	q := url.Values{}
	for name, t := range map[string]time.Time{"since": f.Since, "until": f.Until} {
		if !t.IsZero() {
			q.Set(name, t.UTC().Format(time.RFC3339Nano))
		}
	}
	setNonEmpty(q, "subject", f.Subject)
	setNonEmpty(q, "definition", f.DefinitionID)
	setNonEmpty(q, "kind", f.Kind)
	setNonEmpty(q, "severity", f.Severity)
	setPaging(q, f.Limit, f.Cursor)
	if f.After > 0 {
		q.Set("after", strconv.FormatInt(f.After, 10))
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limit-events", query: q})
	if err == nil {
		err = resp.decode(&page)
	}
	return page, wrap(err, "list events")
}
