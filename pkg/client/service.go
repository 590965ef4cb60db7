package client

import (
	"context"
	"net/http"

	"github.com/rlctl/rlctl/pkg/wire"
)

// VersionInfo describes the server's build and its database schema.
type VersionInfo = wire.VersionInfo

// Version returns the server's version. It needs no token.
func (c *Client) Version(ctx context.Context) (VersionInfo, error) {
	var v VersionInfo
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/version", anonymous: true})
	if err == nil {
		err = resp.decode(&v)
	}
	return v, wrap(err, "get version")
}

// Healthz returns nil while the server process answers. Probes make one
// attempt: they report the present state, and whoever polls them owns the
// retry policy.
func (c *Client) Healthz(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/healthz", anonymous: true, noRetry: true})
	return wrap(err, "health check")
}

// Readyz returns nil when the server can serve: its database answers and
// the schema is current. Otherwise the error is an *APIError with
// ErrUnavailable whose message is the server's reason.
func (c *Client) Readyz(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/readyz", anonymous: true, noRetry: true})
	return wrap(err, "readiness check")
}
