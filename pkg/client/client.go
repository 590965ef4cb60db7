// Package client is the Go SDK for rlapi's management API (docs/api.md). It
// speaks the wire types of pkg/ratelimit, maps RFC 9457 problem details back
// to typed errors, and retries idempotent calls when the server or the
// network fails transiently. rlctl and the dashboard use nothing else to talk
// to rlapi.
//
// Usage:
//
//	c, err := client.New("https://rlapi.example.com", client.Options{Token: os.Getenv("RLCTL_TOKEN")})
//	if err != nil {
//		return err
//	}
//	d, err := c.GetDefinition(ctx, "caller:group:developers:60")
//	if errors.Is(err, client.ErrNotFound) {
//		// create it
//	}
//	limit := 200
//	d.UserMaxRequests = &limit
//	res, err := c.PutDefinition(ctx, d, client.WriteOptions{IfVersion: d.Version, DryRun: true})
//	if err != nil {
//		var apiErr *client.APIError
//		if errors.As(err, &apiErr) {
//			for _, fe := range apiErr.Errors {
//				fmt.Println(fe.Field, fe.Message)
//			}
//		}
//		return err
//	}
//	fmt.Println(res.DryRun.Action, len(res.DryRun.Changes))
//
// Every method takes a context first and applies Options.Timeout on top of
// it. Errors the server reports come back as *APIError, unwrapped so that
// err.Error() is the server's own message; errors.Is(err, ErrNotFound) and
// the other sentinels classify them. Network and decoding errors are wrapped
// with the operation that failed.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rlctl/rlctl/internal/version"
)

// Defaults for Options fields left at their zero value.
const (
	DefaultTimeout = 30 * time.Second
	DefaultRetries = 3
)

// Retry schedule. The backoff doubles from baseBackoff up to maxBackoff; a
// server's Retry-After is honoured up to maxRetryAfter so that a long lockout
// (the auth throttle asks for 300 s) does not hang a CLI invocation.
const (
	baseBackoff   = 100 * time.Millisecond
	maxBackoff    = 2 * time.Second
	maxRetryAfter = 5 * time.Second
)

// maxResponseBytes bounds how much of a response the client buffers. An
// unpaged list of every definition is a few megabytes; anything near this is
// a misbehaving server, not data.
const maxResponseBytes = 256 << 20

// Options configures a Client; zero values take the defaults.
type Options struct {
	// Token is sent as "Authorization: Bearer <Token>" when not empty.
	Token string
	// HTTPClient sends the requests. The default has dial, TLS handshake and
	// idle timeouts, so a dead peer cannot hold a connection forever.
	HTTPClient *http.Client
	// Timeout bounds each method call, retries and backoff included. It is
	// applied on top of the caller's context, so an earlier deadline there
	// still wins. Zero means DefaultTimeout; negative means none beyond the
	// context's.
	Timeout time.Duration
	// UserAgent is appended to "rlctl-go/<version>", e.g. "rlctl/1.2.0".
	UserAgent string
	// Retries is how many times an idempotent call (GET, PUT, DELETE) is
	// retried after a connection error or a 502, 503 or 504. POST is never
	// retried, and a write with WriteOptions.IfVersion only when it cannot
	// have been applied. Zero means DefaultRetries; negative disables
	// retries.
	Retries int
	// Debug, when set, receives one line per request and one per response
	// or failure: method, URL, status, duration. Headers are not written,
	// so the token never reaches it.
	Debug io.Writer

	// Test hooks, so retry tests run without real sleeping or randomness.
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(d time.Duration) time.Duration
}

// Client calls one rlapi server. It is safe for concurrent use.
type Client struct {
	base      *url.URL
	token     string
	hc        *http.Client
	timeout   time.Duration
	userAgent string
	retries   int

	debug   io.Writer
	debugMu sync.Mutex // keeps concurrent calls' debug lines whole

	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	jitter func(d time.Duration) time.Duration
}

// New returns a client for the server at baseURL, an http or https URL
// optionally with a path prefix ("https://gw.example.com/rlapi").
func New(baseURL string, opts Options) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(strings.TrimSpace(baseURL), "/"))
	if err != nil {
		return nil, fmt.Errorf("base url %q: %w", baseURL, err)
	}
	switch {
	case base.Scheme != "http" && base.Scheme != "https":
		return nil, fmt.Errorf("base url %q: scheme must be http or https", baseURL)
	case base.Host == "":
		return nil, fmt.Errorf("base url %q: missing host", baseURL)
	case base.RawQuery != "" || base.ForceQuery || base.Fragment != "":
		return nil, fmt.Errorf("base url %q: must not have a query or fragment", baseURL)
	}

	c := &Client{
		base:      base,
		token:     opts.Token,
		hc:        opts.HTTPClient,
		timeout:   opts.Timeout,
		userAgent: "rlctl-go/" + version.Version,
		retries:   opts.Retries,
		debug:     opts.Debug,
		now:       opts.now,
		sleep:     opts.sleep,
		jitter:    opts.jitter,
	}
	if opts.UserAgent != "" {
		c.userAgent += " " + opts.UserAgent
	}
	if c.hc == nil {
		c.hc = defaultHTTPClient()
	}
	switch {
	case c.timeout == 0:
		c.timeout = DefaultTimeout
	case c.timeout < 0:
		c.timeout = 0
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = sleepContext
	}
	if c.jitter == nil {
		c.jitter = equalJitter
	}
	return c, nil
}

// defaultHTTPClient bounds every phase of a connection that the per-call
// context does not already bound well: a dial or handshake that hangs should
// fail fast and be retried, not eat the whole call's timeout.
func defaultHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment,
			DialContext: (&net.Dialer{
				Timeout:   10 * time.Second,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			ForceAttemptHTTP2:     true,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConns:          16,
			MaxIdleConnsPerHost:   32,
		},
	}
}

// BaseURL returns the server's URL as given to New, without the trailing
// slash and with any password redacted, for messages.
func (c *Client) BaseURL() string { return c.base.Redacted() }

// request describes one API call before it is sent.
type request struct {
	method string
	// path is already escaped: ids are escaped segments (see segment).
	path  string
	query url.Values
	body  any // marshalled as JSON when not nil
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

	target, err := c.url(r)
	if err != nil {
		return nil, err
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
	c.debugf("> %s %s%s", r.method, req.URL.Redacted(), c.debugSuffix(r, n))
	resp, err := c.hc.Do(req)
	if err != nil {
		c.debugf("< %s %s failed after %s: %v", r.method, req.URL.Redacted(), c.since(start), err)
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err == nil && len(data) > maxResponseBytes {
		err = fmt.Errorf("response body exceeds %d MiB", maxResponseBytes>>20)
	}
	c.debugf("< %d %s %s %s%s", resp.StatusCode, r.method, req.URL.Redacted(), c.since(start), requestIDSuffix(resp.Header))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, newAPIError(resp.StatusCode, resp.Header, data, c.now)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

// retryDelay reports whether err is worth another attempt and how long to
// wait first.
//
// A conditional write is retried only when the server certainly did not
// apply it (the dial failed, or rlapi answered 503, which it only does
// before writing). After a lost response it may have been applied, and the
// retry would then fail with a spurious 412 against the version it bumped.
func (c *Client) retryDelay(r request, err error, attempt int) (time.Duration, bool) {
	conditional := r.ifMatch != "" && r.method != http.MethodGet
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		switch apiErr.StatusCode {
		case http.StatusServiceUnavailable:
		case http.StatusBadGateway, http.StatusGatewayTimeout:
			if conditional {
				return 0, false
			}
		default:
			return 0, false
		}
		if apiErr.RetryAfter > 0 {
			return min(apiErr.RetryAfter, maxRetryAfter), true
		}
		return c.backoff(attempt), true
	}
	if !transient(err) || (conditional && !dialFailed(err)) {
		return 0, false
	}
	return c.backoff(attempt), true
}

// dialFailed reports whether err happened before a connection existed, so
// the request cannot have reached the server.
func dialFailed(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

// backoff is the wait before retry number attempt: 100ms, 200ms, 400ms ...
// up to 2s, jittered so that clients failing together do not retry together.
func (c *Client) backoff(attempt int) time.Duration {
	d := maxBackoff
	if attempt <= 5 { // 100ms << 5 already exceeds the cap
		d = min(baseBackoff<<(attempt-1), maxBackoff)
	}
	return c.jitter(d)
}

// equalJitter picks a wait in [d/2, d]: never longer than the documented
// schedule, never so short that retries hammer a struggling server.
func equalJitter(d time.Duration) time.Duration {
	half := d / 2
	return half + rand.N(half+1)
}

// sleepContext waits for d or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// idempotent reports whether a method may be repeated safely. In this API
// PUT is an upsert of the whole resource and DELETE of an absent resource
// is harmless to repeat, so both qualify; POST creates tokens and
// quarantines, which must not happen twice.
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// transient reports whether a transport error is likely to go away on a new
// connection: the server was not listening, dropped the connection, or a
// network step timed out. TLS and URL errors are not transient.
func transient(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return dnsErr.IsTemporary || dnsErr.IsTimeout
	}
	var netErr net.Error
	return errors.As(err, &netErr) && netErr.Timeout()
}

// contextError reports that the context ended while the call was still
// failing, keeping both causes visible to errors.Is.
func contextError(ctxErr, last error) error {
	var apiErr *APIError
	if errors.Is(last, ctxErr) && !errors.As(last, &apiErr) {
		return last
	}
	return fmt.Errorf("%w (last attempt: %w)", ctxErr, last)
}

// finalError returns the error of the last attempt. API errors stay
// unwrapped so their message is the server's.
func finalError(err error, attempts int) error {
	var apiErr *APIError
	if attempts <= 1 || errors.As(err, &apiErr) {
		return err
	}
	return fmt.Errorf("%w (after %d attempts)", err, attempts)
}

// debugf writes one line to Options.Debug, if set.
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

// allPageSize is the page size ListAll* use when the filter sets none:
// large enough to need few round trips, small enough that one page never
// strains the server.
const allPageSize = 1000

// listAll follows next_cursor from cursor until the server has no more.
func listAll[T any](ctx context.Context, limit int, cursor string, page func(ctx context.Context, limit int, cursor string) ([]T, string, error)) ([]T, error) {
	if limit == 0 {
		limit = allPageSize
	}
	var all []T
	for {
		items, next, err := page(ctx, limit, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if next == cursor {
			// A server bug would otherwise loop forever.
			return nil, fmt.Errorf("server returned cursor %q twice", next)
		}
		cursor = next
	}
}

// setNonEmpty adds a query parameter only when it has a value, since the
// server treats a present but empty filter as "match the empty string".
func setNonEmpty(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

// setPaging adds limit and cursor.
func setPaging(q url.Values, limit int, cursor string) {
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	setNonEmpty(q, "cursor", cursor)
}
