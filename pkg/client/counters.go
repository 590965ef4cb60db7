package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
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

// Counter is one enforcement counter: a gate's count in one window, or a
// token bucket's state (Algorithm token_bucket: FullAt and, when the
// server knows the bucket's definition, Tokens of Burst; Count is 0).
type Counter struct {
	Key string `json:"key"`
	// WindowIndex is floor(epoch seconds / WindowSeconds).
	WindowIndex   int64     `json:"window_index"`
	WindowSeconds int       `json:"window_seconds,omitzero"`
	WindowStart   time.Time `json:"window_start,omitzero"`
	Count         int64     `json:"count"`
	ExpiresAt     time.Time `json:"expires_at"`
	// DefinitionID names the definition behind a target or shadow counter;
	// empty for caller and caller_target buckets, which the definitions of
	// one window share.
	DefinitionID string `json:"definition_id,omitempty"`
	// Algorithm is "sliding_window" or "token_bucket"; empty for a fixed
	// window.
	Algorithm string `json:"algorithm,omitempty"`
	// FullAt is when a token bucket is full again; nil when it is full.
	FullAt *time.Time `json:"full_at,omitempty"`
	// Tokens is the whole tokens a token bucket has left, of Burst; nil
	// when the server does not say (caller buckets).
	Tokens *int64 `json:"tokens,omitempty"`
	Burst  int64  `json:"burst,omitempty"`
}

// CounterList is the answer of GET /api/rate-limit-counters, and the
// before-image of a counters reset in the audit log and in dry runs.
type CounterList struct {
	Counters []Counter `json:"counters"`
	// Truncated says more counters matched than the list holds (the
	// server's limit), or, with counters on Redis, that the server stopped
	// looking before it had seen every counter (its scan is bounded).
	Truncated bool `json:"truncated,omitempty"`
}

// CountersReset is the answer of DELETE /api/rate-limit-counters.
type CountersReset struct {
	Reset bool `json:"reset"`
	// Removed is how many counters were set back to zero.
	Removed int64 `json:"removed"`
	// Truncated says the server stopped looking before it had seen every
	// counter (counters on Redis, a bounded scan): some of the subject's
	// counters may remain; reset again.
	Truncated bool `json:"truncated,omitempty"`
}

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
