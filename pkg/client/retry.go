package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Retry schedule. The backoff doubles from baseBackoff up to maxBackoff; a
// server's Retry-After is honoured up to maxRetryAfter so that a long lockout
// (the auth throttle asks for 300 s) does not hang a CLI invocation.
const (
	baseBackoff   = 100 * time.Millisecond
	maxBackoff    = 2 * time.Second
	maxRetryAfter = 5 * time.Second
)

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
