package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TokenRefusal says why VerifyDecisionToken refused a token: Status is
// the HTTP status the decision endpoints answer it with (401, 403, 429 or
// 503), Detail their words.
type TokenRefusal struct {
	Status int
	Detail string
}

func (e *TokenRefusal) Error() string { return e.Detail }

// VerifyDecisionToken checks secret as the decision endpoints check a
// bearer token (same cache, lockout of addresses guessing secrets, role
// admin or enforcer), for the other protocols rlapi serves (the Envoy
// gRPC service). ip is the client's address for the lockout; a zero
// address is never charged. A nil error is a token that may decide.
func (s *Server) VerifyDecisionToken(ctx context.Context, secret string, ip netip.Addr) error {
	charge := ip.IsValid() && !s.trusted(ip)
	if charge {
		if wait := s.authThrottle.lockedFor(ctx, ip); wait > 0 {
			return &TokenRefusal{http.StatusTooManyRequests,
				fmt.Sprintf("too many failed authentications from this address; retry in %ds", int(wait.Seconds()+0.999))}
		}
	}
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return &TokenRefusal{http.StatusUnauthorized, "missing token: send 'authorization: Bearer <token>' metadata"}
	}
	key := [32]byte(token.Hash(secret))
	tok, err := s.verifyToken(ctx, key, permDecide)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if charge {
			s.authThrottle.fail(ctx, ip)
		}
		return &TokenRefusal{http.StatusUnauthorized, "invalid token"}
	case err != nil:
		return &TokenRefusal{http.StatusServiceUnavailable, "the token cannot be verified now; retry shortly"}
	case tok.RevokedAt != nil:
		return &TokenRefusal{http.StatusUnauthorized, "token has been revoked"}
	case tok.ExpiresAt != nil && !s.now().Before(*tok.ExpiresAt):
		return &TokenRefusal{http.StatusUnauthorized, "token has expired"}
	}
	if charge {
		s.authThrottle.succeeded(ctx, ip)
	}
	if !permDecide.allows(tok.Role) {
		return &TokenRefusal{http.StatusForbidden, fmt.Sprintf("token %q has role %s, which may not decide", tok.Name, tok.Role)}
	}
	s.touchToken(key, tok)
	return nil
}

// DecisionTokenCached reports, from memory alone, whether secret is a
// token this replica verified that may decide: known true when its cache
// holds the token (then valid says whether it is live, unexpired and of a
// deciding role, as last read; read past its TTL or since a change to
// some token, valid only when it could decide then, and the full check
// reads it again), known false when only the database can tell. It does
// no I/O, so it can run where blocking would stall other calls (a gRPC
// connection's reader); the full check, VerifyDecisionToken, still
// follows.
func (s *Server) DecisionTokenCached(secret string) (valid, known bool) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return false, true
	}
	key := [32]byte(token.Hash(secret))
	tok, ok := s.tokens.get(key, s.now())
	if !ok {
		// Past its TTL, or made stale by a change to some token: a token
		// that could decide when it was last read is let through, and its
		// handler verifies it against the database again (the cache
		// misses). Without this, every cached token's expiry, and every
		// revocation anywhere, sent a gateway's burst of calls to the
		// few admission slots of unverified tokens, and the rest were
		// refused (ResourceExhausted) although their token was good.
		if tok, ok = s.tokens.hint(key, s.now()); ok && decides(tok, s.now()) {
			return true, true
		}
		return false, false
	}
	return decides(tok, s.now()), true
}

// decides reports whether tok, as read, is live, unexpired at now and of
// a role that may decide.
func decides(tok ratelimit.Token, now time.Time) bool {
	live := tok.RevokedAt == nil && (tok.ExpiresAt == nil || now.Before(*tok.ExpiresAt))
	return live && permDecide.allows(tok.Role)
}
