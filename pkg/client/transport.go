package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxResponseBytes bounds how much of a response the client buffers. An
// unpaged list of every definition is a few megabytes; anything near this is
// a misbehaving server, not data.
const maxResponseBytes = 256 << 20

// request describes one API call before it is sent.
type request struct {
	method string
	// path is already escaped: ids are escaped segments (see segment).
	path  string
	query url.Values
	body  any // marshalled as JSON when not nil
	// target, when set, is the URL of path, built once (see Client.checkURL).
	target string
	// ifMatch is a version, sent quoted as If-Match.
	ifMatch string
	// anonymous calls (probes, version) carry no token: they need none and
	// should not spread it further than necessary.
	anonymous bool
	// noRetry makes even an idempotent call a single attempt.
	noRetry bool
}

// response is a fully read answer with a 2xx status.
type response struct {
	status int
	header http.Header
	body   []byte
}

// decode unmarshals the body into v.
func (r *response) decode(v any) error {
	if err := json.Unmarshal(r.body, v); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	return nil
}

// etagVersion returns the version carried by the ETag header, or 0.
func (r *response) etagVersion() int64 {
	tag := strings.TrimPrefix(r.header.Get("ETag"), "W/")
	v, err := strconv.ParseInt(strings.Trim(tag, `"`), 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

// segment escapes an id so it travels as exactly one path segment: '/', '?',
// '#', '%', spaces and non-ASCII bytes are all percent-encoded. "." and ".."
// are refused because every HTTP stack treats them as dot-segments, escaped
// or not, so they could only ever reach the wrong route.
func segment(id string) (string, error) {
	switch id {
	case "":
		return "", errors.New("empty id")
	case ".", "..":
		return "", fmt.Errorf("id %q cannot be sent in a url path", id)
	}
	return url.PathEscape(id), nil
}

// do sends r, retrying when allowed, and returns the 2xx response. Non-2xx
// answers come back as *APIError; other failures are returned unwrapped for
// the caller to give context.
func (c *Client) do(ctx context.Context, r request) (*response, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}

	target, err := r.target, error(nil)
	if target == "" {
		if target, err = c.url(r); err != nil {
			return nil, err
		}
	}
	var body []byte
	if r.body != nil {
		if body, err = json.Marshal(r.body); err != nil {
			return nil, fmt.Errorf("encode request: %w", err)
		}
	}

	attempts := 1
	if !r.noRetry && idempotent(r.method) {
		attempts += c.retries
	}
	for attempt := 1; ; attempt++ {
		resp, err := c.attempt(ctx, r, target, body, attempt)
		if err == nil {
			return resp, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, contextError(ctxErr, err)
		}
		delay, retry := c.retryDelay(r, err, attempt)
		if !retry || attempt >= attempts {
			return nil, finalError(err, attempt)
		}
		if deadline, ok := ctx.Deadline(); ok && c.now().Add(delay).After(deadline) {
			// Waiting would outlast the deadline; the last answer is
			// more useful than "context deadline exceeded".
			return nil, finalError(err, attempt)
		}
		if serr := c.sleep(ctx, delay); serr != nil {
			return nil, contextError(serr, err)
		}
	}
}

// url builds the request URL. The escaped path is parsed rather than
// assigned to URL.Path so that url.URL keeps RawPath and net/http sends %2F
// as %2F instead of a '/' that would split the id.
func (c *Client) url(r request) (string, error) {
	s := c.base.Scheme + "://" + c.base.Host + c.base.EscapedPath() + r.path
	if len(r.query) > 0 {
		s += "?" + r.query.Encode()
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("build url: %w", err)
	}
	u.User = c.base.User
	return u.String(), nil
}

// attempt sends one request and reads the whole response.
func (c *Client) attempt(ctx context.Context, r request, target string, body []byte, n int) (*response, error) {
	var rd io.Reader
	if body != nil {
		// A *bytes.Reader makes NewRequest set GetBody, so the transport
		// can replay the body on its own internal retries too.
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json, application/problem+json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.ifMatch != "" {
		req.Header.Set("If-Match", `"`+r.ifMatch+`"`)
	}
	if c.token != "" && !r.anonymous {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}

	start := c.now()
	if c.debug != nil {
		c.debugf("> %s %s%s", r.method, req.URL.Redacted(), c.debugSuffix(r, n))
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if c.debug != nil {
			c.debugf("< %s %s failed after %s: %v", r.method, req.URL.Redacted(), c.since(start), err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	data, err := readResponse(resp)
	if c.debug != nil {
		c.debugf("< %d %s %s %s%s", resp.StatusCode, r.method, req.URL.Redacted(), c.since(start), requestIDSuffix(resp.Header))
	}
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, newAPIError(resp.StatusCode, resp.Header, data, c.now)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// readResponse reads the whole body, at most maxResponseBytes of it: in
// one allocation when the server said it is short (a decision's answer
// always is), else growing as it comes, so that a length claimed but not
// sent costs no memory.
func readResponse(resp *http.Response) ([]byte, error) {
	// (A HEAD answer says a length and has no body.)
	if n := resp.ContentLength; n >= 0 && n <= 64<<10 && (resp.Request == nil || resp.Request.Method != http.MethodHead) {
		data := make([]byte, n)
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			return nil, err
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err == nil && len(data) > maxResponseBytes {
		err = fmt.Errorf("response body exceeds %d MiB", maxResponseBytes>>20)
	}
	return data, err
}

// debugf writes one line to Options.Debug; its callers check that it is
// set first, so that the arguments cost nothing when it is not.
func (c *Client) debugf(format string, args ...any) {
	if c.debug == nil {
		return
	}
	c.debugMu.Lock()
	defer c.debugMu.Unlock()
	fmt.Fprintf(c.debug, "rlctl-go: "+format+"\n", args...)
}

func (c *Client) debugSuffix(r request, attempt int) string {
	var s string
	if c.token != "" && !r.anonymous {
		s += " authorization=redacted"
	}
	if r.ifMatch != "" {
		s += ` if-match="` + r.ifMatch + `"`
	}
	if attempt > 1 {
		s += " attempt=" + strconv.Itoa(attempt)
	}
	return s
}

func (c *Client) since(start time.Time) time.Duration {
	return c.now().Sub(start).Round(time.Microsecond)
}

func requestIDSuffix(h http.Header) string {
	if id := h.Get("X-Request-ID"); id != "" {
		return " request_id=" + id
	}
	return ""
}
