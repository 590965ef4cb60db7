package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// MembershipFilter narrows ListMemberships; empty fields do not filter.
type MembershipFilter struct {
	Group       string
	SubjectType string
	// Limit is the page size (1..10000); zero asks for the whole list.
	Limit  int
	Cursor string
}

func (f MembershipFilter) query() url.Values {
	q := url.Values{}
	setNonEmpty(q, "group", f.Group)
	setNonEmpty(q, "subject_type", f.SubjectType)
	setPaging(q, f.Limit, f.Cursor)
	return q
}

// MembershipPage is one page of memberships.
type MembershipPage struct {
	Memberships []ratelimit.Membership `json:"memberships"`
	// NextCursor continues the list; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ListMemberships returns one page of memberships (all of them when
// f.Limit is zero).
func (c *Client) ListMemberships(ctx context.Context, f MembershipFilter) (MembershipPage, error) {
	var page MembershipPage
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limit-memberships", query: f.query()})
	if err == nil {
		err = resp.decode(&page)
	}
	return page, wrap(err, "list memberships")
}

// ListAllMemberships follows cursors from f.Cursor to the end of the list,
// in pages of f.Limit (1000 when zero).
func (c *Client) ListAllMemberships(ctx context.Context, f MembershipFilter) ([]ratelimit.Membership, error) {
	return listAll(ctx, f.Limit, f.Cursor, func(ctx context.Context, limit int, cursor string) ([]ratelimit.Membership, string, error) {
		f.Limit, f.Cursor = limit, cursor
		page, err := c.ListMemberships(ctx, f)
		return page.Memberships, page.NextCursor, err
	})
}

// GetMembership returns the membership with the given id
// (<subject_type>:<subject>); ErrNotFound if there is none.
func (c *Client) GetMembership(ctx context.Context, id string) (ratelimit.Membership, error) {
	var m ratelimit.Membership
	seg, err := segment(id)
	if err != nil {
		return m, wrap(err, "get membership %q", id)
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limit-memberships/" + seg})
	if err == nil {
		err = resp.decode(&m)
		fillMembership(&m, resp)
	}
	return m, wrap(err, "get membership %q", id)
}

// PutMembership creates or replaces m under m.Key(), the id its body
// implies. Adding an administrator to quarantine-callers is
// ErrAdminQuarantine (an ErrForbidden).
func (c *Client) PutMembership(ctx context.Context, m ratelimit.Membership, o WriteOptions) (PutResult[ratelimit.Membership], error) {
	id := m.Key()
	seg, err := segment(id)
	if err != nil {
		return PutResult[ratelimit.Membership]{}, wrap(err, "put membership %q", id)
	}
	r := request{method: http.MethodPut, path: "/api/rate-limit-memberships/" + seg, body: m}
	o.apply(&r)
	res, err := doPut(ctx, c, r, o, fillMembership)
	return res, wrap(err, "put membership %q", id)
}

// DeleteMembership deletes a membership. It returns a report only for a
// dry run.
func (c *Client) DeleteMembership(ctx context.Context, id string, o WriteOptions) (*DryRunReport, error) {
	seg, err := segment(id)
	if err != nil {
		return nil, wrap(err, "delete membership %q", id)
	}
	r := request{method: http.MethodDelete, path: "/api/rate-limit-memberships/" + seg}
	o.apply(&r)
	rep, err := doDelete(ctx, c, r, o)
	return rep, wrap(err, "delete membership %q", id)
}

// fillMembership takes the version from the ETag when the body has none.
func fillMembership(m *ratelimit.Membership, resp *response) {
	if m.Version == 0 {
		m.Version = resp.etagVersion()
	}
}
