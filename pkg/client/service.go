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

// ServerInfo is how the replica that answered is set up: where its
// decisions count (and whether that store answers now), its gRPC listener
// and its leases. See wire.ServerInfo.
type ServerInfo = wire.ServerInfo

// CounterStoreInfo, GRPCInfo, LeaseInfo and FailPolicyInfo are
// ServerInfo's parts.
type (
	CounterStoreInfo = wire.CounterStoreInfo
	GRPCInfo         = wire.GRPCInfo
	LeaseInfo        = wire.LeaseInfo
	FailPolicyInfo   = wire.FailPolicyInfo
)

// ServerInfo returns the setup of the replica that answers (GET
// /api/server; a viewer or admin token).
func (c *Client) ServerInfo(ctx context.Context) (ServerInfo, error) {
	var s ServerInfo
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/server"})
	if err == nil {
		err = resp.decode(&s)
	}
	return s, wrap(err, "get the server's setup")
}
