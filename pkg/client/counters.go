package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rlctl/rlctl/pkg/wire"
)

// CounterSelector names the subject whose counters to read or reset.
// Exactly one field must be set.
type CounterSelector struct {
	// Caller is "user:<name>" or "agent:<client id>" ("client:<client id>"
	// also works), or "ip:<address>" for an anonymous caller keyed by its
	// client address ("ip:203.0.113.7", "ip:2001:db8:1:2::/64"): its caller
	// and caller_target buckets and its shadow counters.
	Caller string
	// Target is "<entity_type>:<name>" (mcp_server, a2a_agent, mcp_tool,
	// a2a_skill, or route:<tier> for a route tier's per-caller buckets): its
	// target and server-group counters and every caller's
	// caller_target buckets and shadow counters on it.
	Target string
	// Definition is a definition id: its target counter(s) or its shadow
	// counters, and for an enabled enforce caller or caller_target
	// definition the buckets of its axis and window of the callers it
	// applies to (shared with the caller's other definitions of that
	// window).
	Definition string
}

// String returns the selector as the server files it in the audit log,
// e.g. "caller=user:alice" (before the server normalizes the value).
func (s CounterSelector) String() string {
	name, value, _ := s.param()
	return name + "=" + value
}

// param returns the one query parameter the selector sends.
func (s CounterSelector) param() (name, value string, err error) {
	set := 0
	for _, p := range []struct{ name, value string }{{"caller", s.Caller}, {"target", s.Target}, {"definition", s.Definition}} {
		if p.value != "" {
			set++
			name, value = p.name, p.value
		}
	}
	if set != 1 {
		return name, value, errors.New("counter selector: set exactly one of Caller, Target or Definition")
	}
	return name, value, nil
}

func (s CounterSelector) query() (url.Values, error) {
	name, value, err := s.param()
	if err != nil {
		return nil, err
	}
	return url.Values{name: {value}}, nil
}

// The counters API's answers are declared in pkg/wire, which rlapi
// encodes too.
type (
	Counter       = wire.Counter
	CounterList   = wire.CounterList
	CountersReset = wire.CountersReset
)

// ListCounters returns the live counters of one subject, sorted by key then
// window: at most limit of them (1 to 10000; 0 asks for the server's limit,
// 10000). When the list's Truncated is set it is not the whole answer: more
// counters matched than the limit, or (counters on Redis) the server's
// bounded scan stopped early.
func (c *Client) ListCounters(ctx context.Context, sel CounterSelector, limit int) (CounterList, error) {
	q, err := sel.query()
	if err != nil {
		return CounterList{}, err
	}
	if limit < 0 || limit > 10000 {
		return CounterList{}, fmt.Errorf("list counters %s: limit %d: must be between 1 and 10000, or 0 for the server's limit", sel, limit)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var body CounterList
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limit-counters", query: q})
	if err == nil {
		err = resp.decode(&body)
	}
	if body.Counters == nil && err == nil {
		body.Counters = []Counter{}
	}
	return body, wrap(err, "list counters %s", sel)
}

// ResetCounters sets the live counters of one subject back to zero and
// says how many it reset (Removed). With WriteOptions.DryRun nothing
// changes and Removed is how many would be reset. Truncated says the
// server stopped looking before it had seen every counter (a bounded scan
// on Redis): some may remain, and a second reset takes them. IfVersion
// does not apply.
func (c *Client) ResetCounters(ctx context.Context, sel CounterSelector, o WriteOptions) (CountersReset, error) {
	q, err := sel.query()
	if err != nil {
		return CountersReset{}, err
	}
	r := request{method: http.MethodDelete, path: "/api/rate-limit-counters", query: q}
	o.IfVersion = 0
	o.apply(&r)
	resp, err := c.do(ctx, r)
	if err != nil {
		return CountersReset{}, wrap(err, "reset counters %s", sel)
	}
	if o.DryRun {
		rep, err := decodeReport(resp)
		if err != nil {
			return CountersReset{}, wrap(err, "reset counters %s", sel)
		}
		if rep.Before == nil {
			return CountersReset{}, nil
		}
		var before CounterList
		if err := json.Unmarshal(rep.Before, &before); err != nil {
			return CountersReset{}, fmt.Errorf("reset counters %s: decode dry-run report: %w", sel, err)
		}
		return CountersReset{Removed: int64(len(before.Counters)), Truncated: before.Truncated}, nil
	}
	var body CountersReset
	err = resp.decode(&body)
	return body, wrap(err, "reset counters %s", sel)
}
