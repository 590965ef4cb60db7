package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// DefinitionFilter narrows ListDefinitions; empty fields do not filter.
type DefinitionFilter struct {
	Axis       string
	EntityType string
	Name       string
	Enabled    *bool
	// Group selects group definitions of that name and the server groups
	// that list it as a member.
	Group string
	// Limit is the page size (1..10000); zero asks for the whole list.
	Limit  int
	Cursor string
}

func (f DefinitionFilter) query() url.Values {
	q := url.Values{}
	setNonEmpty(q, "axis", f.Axis)
	setNonEmpty(q, "entity_type", f.EntityType)
	setNonEmpty(q, "name", f.Name)
	if f.Enabled != nil {
		q.Set("enabled", strconv.FormatBool(*f.Enabled))
	}
	setNonEmpty(q, "group", f.Group)
	setPaging(q, f.Limit, f.Cursor)
	return q
}

// DefinitionPage is one page of definitions.
type DefinitionPage struct {
	Definitions []ratelimit.Definition `json:"definitions"`
	// NextCursor continues the list; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ListDefinitions returns one page of definitions (all of them when
// f.Limit is zero).
func (c *Client) ListDefinitions(ctx context.Context, f DefinitionFilter) (DefinitionPage, error) {
	var page DefinitionPage
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limits", query: f.query()})
	if err == nil {
		err = resp.decode(&page)
	}
	return page, wrap(err, "list definitions")
}

// ListAllDefinitions follows cursors from f.Cursor to the end of the list,
// in pages of f.Limit (1000 when zero), so that no single response is huge.
func (c *Client) ListAllDefinitions(ctx context.Context, f DefinitionFilter) ([]ratelimit.Definition, error) {
	return listAll(ctx, f.Limit, f.Cursor, func(ctx context.Context, limit int, cursor string) ([]ratelimit.Definition, string, error) {
		f.Limit, f.Cursor = limit, cursor
		page, err := c.ListDefinitions(ctx, f)
		return page.Definitions, page.NextCursor, err
	})
}

// GetDefinition returns the definition with the given id; ErrNotFound if
// there is none.
func (c *Client) GetDefinition(ctx context.Context, id string) (ratelimit.Definition, error) {
	var d ratelimit.Definition
	seg, err := segment(id)
	if err != nil {
		return d, wrap(err, "get definition %q", id)
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limits/" + seg})
	if err == nil {
		err = resp.decode(&d)
		fillDefinition(&d, resp)
	}
	return d, wrap(err, "get definition %q", id)
}

// PutDefinition creates or replaces d under d.Key(), the id its body
// implies; the server refuses a body whose id does not match the URL, so
// any id set in d.ID is not used.
func (c *Client) PutDefinition(ctx context.Context, d ratelimit.Definition, o WriteOptions) (PutResult[ratelimit.Definition], error) {
	id := d.Key()
	seg, err := segment(id)
	if err != nil {
		return PutResult[ratelimit.Definition]{}, wrap(err, "put definition %q", id)
	}
	r := request{method: http.MethodPut, path: "/api/rate-limits/" + seg, body: d}
	o.apply(&r)
	res, err := doPut(ctx, c, r, o, fillDefinition)
	return res, wrap(err, "put definition %q", id)
}

// DeleteDefinition deletes a definition. It returns a report only for a
// dry run. The quarantine sentinels cannot be deleted (ErrConflict). When
// a retry follows a lost response, ErrNotFound may mean the earlier attempt
// did the deletion.
func (c *Client) DeleteDefinition(ctx context.Context, id string, o WriteOptions) (*DryRunReport, error) {
	seg, err := segment(id)
	if err != nil {
		return nil, wrap(err, "delete definition %q", id)
	}
	r := request{method: http.MethodDelete, path: "/api/rate-limits/" + seg}
	o.apply(&r)
	rep, err := doDelete(ctx, c, r, o)
	return rep, wrap(err, "delete definition %q", id)
}

// SetDefinitionEnabled enables or disables a definition in place and
// returns it, or, for a dry run, the report and a zero definition.
func (c *Client) SetDefinitionEnabled(ctx context.Context, id string, enabled bool, o WriteOptions) (ratelimit.Definition, *DryRunReport, error) {
	var d ratelimit.Definition
	seg, err := segment(id)
	if err != nil {
		return d, nil, wrap(err, "set definition %q enabled", id)
	}
	r := request{
		method: http.MethodPost,
		path:   "/api/rate-limits-enabled/" + seg,
		query:  url.Values{"enabled": {strconv.FormatBool(enabled)}},
	}
	o.apply(&r)
	resp, err := c.do(ctx, r)
	if err != nil {
		return d, nil, wrap(err, "set definition %q enabled", id)
	}
	if o.DryRun {
		rep, err := decodeReport(resp)
		return d, rep, wrap(err, "set definition %q enabled", id)
	}
	err = resp.decode(&d)
	fillDefinition(&d, resp)
	return d, nil, wrap(err, "set definition %q enabled", id)
}

// StatusQuery names whose limits Status should resolve: a group (Identity)
// or a caller (Username or ClientID), optionally for one target.
type StatusQuery struct {
	Identity string
	Username string
	ClientID string
	// Team is a team whose groups are resolved with the caller's.
	Team       string
	EntityType string
	Name       string
	// Path and Method select the route definitions matching a request
	// (Method optional).
	Path   string
	Method string
	// ClientIP is the caller's client address: its network's groups and
	// per-address limits, as in a decision; alone, an anonymous caller.
	ClientIP string
	// Kind is what a tool call invokes (tool, prompt, resource,
	// completion): tool definitions naming other kinds are left out.
	Kind string
}

// StatusResult is the definitions that apply to a caller, a target or a
// request.
type StatusResult = wire.StatusResult

// StatusMatch is the pattern through which a route or tool definition
// applies.
type StatusMatch = wire.StatusMatch

// Status returns the definitions that apply to the caller or group in q.
func (c *Client) Status(ctx context.Context, q StatusQuery) (StatusResult, error) {
	var res StatusResult
	v := url.Values{}
	setNonEmpty(v, "identity", q.Identity)
	setNonEmpty(v, "username", q.Username)
	setNonEmpty(v, "client_id", q.ClientID)
	setNonEmpty(v, "team", q.Team)
	setNonEmpty(v, "entity_type", q.EntityType)
	setNonEmpty(v, "name", q.Name)
	setNonEmpty(v, "path", q.Path)
	setNonEmpty(v, "method", q.Method)
	setNonEmpty(v, "client_ip", q.ClientIP)
	setNonEmpty(v, "kind", q.Kind)
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limits-status", query: v})
	if err == nil {
		err = resp.decode(&res)
	}
	return res, wrap(err, "rate-limit status")
}

// fillDefinition takes the version from the ETag when the body has none.
func fillDefinition(d *ratelimit.Definition, resp *response) {
	if d.Version == 0 {
		d.Version = resp.etagVersion()
	}
}
