package apitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/rlctl/rlctl/docs"
)

// Contract checks real responses against docs/openapi.yaml. Wrap a client's
// transport with Transport and every response the test receives is
// validated (status, headers, body) against the operation it answered.
//
// Routes are matched by a small matcher of our own rather than kin-openapi's
// routers: the API's ids are the rest of the path ({id...} on the server),
// so they arrive percent-encoded (%2F) or, as the reference allows, with raw
// '/' in them. A template's last parameter therefore takes every remaining
// segment of the escaped path; any other parameter takes exactly one; and
// when several templates match, the one with fewer parameters (then more
// literal segments) wins, as with net/http's most-specific-pattern rule.
type Contract struct {
	t      testing.TB
	doc    *openapi3.T
	routes []specRoute

	mu   sync.Mutex
	seen map[string]bool
}

// specRoute is one path template of the document, split for matching.
type specRoute struct {
	template string
	segments []string
	params   int
	item     *openapi3.PathItem
}

// loadSpec parses and validates the embedded document once per test binary.
var loadSpec = sync.OnceValues(func() (*openapi3.T, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(docs.OpenAPIYAML)
	if err != nil {
		return nil, fmt.Errorf("load docs/openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("docs/openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	return doc, nil
})

// NewContract loads and validates docs/openapi.yaml (once per process) and
// returns a checker that reports to t.
func NewContract(t testing.TB) *Contract {
	t.Helper()
	doc, err := loadSpec()
	if err != nil {
		t.Fatal(err)
	}
	c := &Contract{t: t, doc: doc, seen: map[string]bool{}}
	for template, item := range doc.Paths.Map() {
		r := specRoute{template: template, segments: strings.Split(template, "/"), item: item}
		for _, s := range r.segments {
			if isParam(s) {
				r.params++
			}
		}
		c.routes = append(c.routes, r)
	}
	// Deterministic order; the match itself picks by specificity.
	slices.SortFunc(c.routes, func(a, b specRoute) int { return strings.Compare(a.template, b.template) })
	return c
}

// Doc returns the parsed document.
func (c *Contract) Doc() *openapi3.T { return c.doc }

func isParam(segment string) bool {
	return len(segment) > 2 && segment[0] == '{' && segment[len(segment)-1] == '}'
}

// match finds the spec route for an escaped request path and its path
// parameters, unescaped.
func (c *Contract) match(escapedPath string) (*specRoute, map[string]string, bool) {
	parts := strings.Split(escapedPath, "/")
	var (
		best       *specRoute
		bestParams map[string]string
	)
	for i := range c.routes {
		r := &c.routes[i]
		params, ok := r.matches(parts)
		if !ok {
			continue
		}
		if best == nil || r.params < best.params ||
			(r.params == best.params && len(r.segments)-r.params > len(best.segments)-best.params) {
			best, bestParams = r, params
		}
	}
	return best, bestParams, best != nil
}

func (r *specRoute) matches(parts []string) (map[string]string, bool) {
	params := map[string]string{}
	for i, seg := range r.segments {
		last := i == len(r.segments)-1
		if i >= len(parts) {
			return nil, false
		}
		if !isParam(seg) {
			if parts[i] != seg {
				return nil, false
			}
			continue
		}
		raw := parts[i]
		if last {
			// The rest of the path, as the server's {id...} takes it.
			raw = strings.Join(parts[i:], "/")
		}
		if raw == "" {
			return nil, false
		}
		v, err := url.PathUnescape(raw)
		if err != nil {
			return nil, false
		}
		params[seg[1:len(seg)-1]] = v
		if last {
			return params, true
		}
	}
	return params, len(parts) == len(r.segments)
}

// Transport returns a RoundTripper that sends through base (or
// http.DefaultTransport when nil) and checks every response against the
// document. A request whose route or method is not in the document, or a
// response that does not match its operation, fails the test with
// t.Errorf; the response is returned to the caller intact either way.
func (c *Contract) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &contractTransport{c: c, base: base}
}

type contractTransport struct {
	c    *Contract
	base http.RoundTripper
}

func (rt *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("contract: read response body of %s %s: %w", req.Method, req.URL.Path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	rt.c.check(req, resp, body)
	return resp, nil
}

// check validates one response and records what it saw.
func (c *Contract) check(req *http.Request, resp *http.Response, body []byte) {
	path := req.URL.EscapedPath()
	r, params, ok := c.match(path)
	if !ok {
		c.t.Errorf("contract: %s %s (answered %d) is not a path of docs/openapi.yaml", req.Method, path, resp.StatusCode)
		return
	}
	method := req.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	op := r.item.GetOperation(method)
	if op == nil {
		c.t.Errorf("contract: %s %s (answered %d): docs/openapi.yaml has no %s operation on %s",
			req.Method, path, resp.StatusCode, method, r.template)
		return
	}
	c.mu.Lock()
	c.seen[method+" "+r.template+" "+strconv.Itoa(resp.StatusCode)] = true
	c.mu.Unlock()

	route := &routers.Route{Spec: c.doc, Path: r.template, PathItem: r.item, Method: method, Operation: op}
	opts := &openapi3filter.Options{ExcludeRequestBody: true, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route, Options: opts,
		},
		Status:  resp.StatusCode,
		Header:  resp.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: opts,
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		c.t.Errorf("contract: %s %s (%s %s) answered %d, which does not match docs/openapi.yaml: %v\nbody: %s",
			req.Method, path, method, r.template, resp.StatusCode, err, truncate(body, 2000))
	}
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "..."
}

// Seen lists the "METHOD /path-template STATUS" combinations checked so
// far, sorted, for coverage reports.
func (c *Contract) Seen() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.seen))
	for k := range c.seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
