package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

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
// window: at most the server's limit (10000).
func (c *Client) ListCounters(ctx context.Context, sel CounterSelector) ([]Counter, error) {
	q, err := sel.query()
	if err != nil {
		return nil, err
	}
	var body CounterList
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/rate-limit-counters", query: q})
	if err == nil {
		err = resp.decode(&body)
	}
	if body.Counters == nil && err == nil {
		body.Counters = []Counter{}
	}
	return body.Counters, wrap(err, "list counters %s", sel)
}

// ResetCounters sets the live counters of one subject back to zero and
// returns how many it reset. With WriteOptions.DryRun nothing changes and
// removed is how many would be reset. IfVersion does not apply.
func (c *Client) ResetCounters(ctx context.Context, sel CounterSelector, o WriteOptions) (removed int64, err error) {
	q, err := sel.query()
	if err != nil {
		return 0, err
	}
	r := request{method: http.MethodDelete, path: "/api/rate-limit-counters", query: q}
	o.IfVersion = 0
	o.apply(&r)
	resp, err := c.do(ctx, r)
	if err != nil {
		return 0, wrap(err, "reset counters %s", sel)
	}
	if o.DryRun {
		rep, err := decodeReport(resp)
		if err != nil {
			return 0, wrap(err, "reset counters %s", sel)
		}
		if rep.Before == nil {
			return 0, nil
		}
		var before CounterList
		if err := json.Unmarshal(rep.Before, &before); err != nil {
			return 0, fmt.Errorf("reset counters %s: decode dry-run report: %w", sel, err)
		}
		return int64(len(before.Counters)), nil
	}
	var body CountersReset
	err = resp.decode(&body)
	return body.Removed, wrap(err, "reset counters %s", sel)
}
