package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
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
// token this replica verified recently that may decide now: known true
// when its cache holds the token (then valid says whether it is live,
// unexpired and of a deciding role), known false when only the database
// can tell. It does no I/O, so it can run where blocking would stall
// other calls (a gRPC connection's reader); the full check,
// VerifyDecisionToken, still follows.
func (s *Server) DecisionTokenCached(secret string) (valid, known bool) {
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return false, true
	}
	tok, ok := s.tokens.get([32]byte(token.Hash(secret)), s.now())
	if !ok {
		return false, false
	}
	live := tok.RevokedAt == nil && (tok.ExpiresAt == nil || s.now().Before(*tok.ExpiresAt))
	return live && permDecide.allows(tok.Role), true
}
