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
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/version"
)

// Defaults for Options fields left at their zero value.
const (
	DefaultTimeout = 30 * time.Second
	DefaultRetries = 3
)

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
	// checkURL is /api/check's URL, built once: Check is the call a
	// gateway makes for every request it serves.
	checkURL string

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
	if c.checkURL, err = c.url(request{path: "/api/check"}); err != nil {
		return nil, err
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
