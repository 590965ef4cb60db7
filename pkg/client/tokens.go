package client

import (
	"context"
	"net/http"

	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// CreateTokenRequest describes a token to create.
type CreateTokenRequest struct {
	Name string `json:"name"`
	Role string `json:"role"` // ratelimit.RoleAdmin, RoleViewer or RoleEnforcer
	// ExpiresInSeconds makes the token expire after that long; zero never.
	ExpiresInSeconds int `json:"expires_in_seconds,omitempty"`
}

// CreatedToken is a new token's record and its secret, shown this once.
type CreatedToken = wire.CreatedToken

// ListTokens returns every token, revoked and expired ones included.
func (c *Client) ListTokens(ctx context.Context) ([]ratelimit.Token, error) {
	var body wire.TokenList
	resp, err := c.do(ctx, request{method: http.MethodGet, path: "/api/tokens"})
	if err == nil {
		err = resp.decode(&body)
	}
	return body.Tokens, wrap(err, "list tokens")
}

// CreateToken creates a token and returns its secret. It is a POST and so
// never retried: a retry after a lost answer could mint a second secret.
func (c *Client) CreateToken(ctx context.Context, req CreateTokenRequest) (CreatedToken, error) {
	var t CreatedToken
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/api/tokens", body: req})
	if err == nil {
		err = resp.decode(&t)
	}
	return t, wrap(err, "create token %q", req.Name)
}

// RevokeToken revokes the named token.
func (c *Client) RevokeToken(ctx context.Context, name string) error {
	seg, err := segment(name)
	if err != nil {
		return wrap(err, "revoke token %q", name)
	}
	_, err = c.do(ctx, request{method: http.MethodDelete, path: "/api/tokens/" + seg})
	return wrap(err, "revoke token %q", name)
}
