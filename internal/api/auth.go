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
	"github.com/rlctl/rlctl/pkg/clientip"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// permission is what a route needs from the caller's role.
type permission int

const (
	permPublic permission = iota // no token
	permRead                     // admin or viewer
	permWrite                    // admin
	permDecide                   // admin or enforcer
)

func (p permission) allows(role string) bool {
	switch p {
	case permPublic:
		return true
	case permRead:
		return role == ratelimit.RoleAdmin || role == ratelimit.RoleViewer
	case permWrite:
		return role == ratelimit.RoleAdmin
	case permDecide:
		return role == ratelimit.RoleAdmin || role == ratelimit.RoleEnforcer
	}
	return false
}

// actorName is the authenticated token's name ("" before authentication).
func actorName(ctx context.Context) string {
	if st := stateOf(ctx); st != nil && st.token != nil {
		return st.token.Name
	}
	return ""
}

// touchEvery bounds how often a token's last_used_at is written: once a
// minute is precise enough to spot unused tokens and keeps reads read-only.
const touchEvery = time.Minute

// authenticate checks the bearer token and the role the route needs.
//
// Only unknown tokens count as failed authentications for the lockout: a
// missing, expired or revoked token is refused but is no guess at a
// secret. A client address that is itself a trusted proxy is never charged
// nor locked out (it speaks for everyone behind it), and an address that
// authenticates has its failures forgotten.
func (s *Server) authenticate(p permission, next http.Handler) http.Handler {
	if p == permPublic {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := s.clientIP(r)
		charge := !s.trusted(ip)
		if charge {
			if wait := s.authThrottle.lockedFor(r.Context(), ip); wait > 0 {
				he := errorf(http.StatusTooManyRequests, "too-many-auth-failures", "Too many failed authentications",
					fmt.Sprintf("too many failed authentications from this address; retry in %ds", int(wait.Seconds()+0.999)))
				he.retryAfter = wait
				s.writeProblem(w, r, he)
				return
			}
		}
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(secret) == "" {
			s.unauthorized(w, r, "missing bearer token: send 'Authorization: Bearer <token>'")
			return
		}
		key := [32]byte(token.Hash(secret))
		tok, err := s.verifyToken(r.Context(), key, p)
		switch {
		case errors.Is(err, store.ErrNotFound):
			if charge {
				s.authThrottle.fail(r.Context(), ip)
			}
			s.unauthorized(w, r, "invalid token")
			return
		case err != nil:
			s.writeProblem(w, r, s.unverifiable(r, p, err))
			return
		case tok.RevokedAt != nil:
			s.unauthorized(w, r, "token has been revoked")
			return
		case tok.ExpiresAt != nil && !s.now().Before(*tok.ExpiresAt):
			s.unauthorized(w, r, "token has expired")
			return
		}
		if charge {
			s.authThrottle.succeeded(r.Context(), ip)
		}
		if !p.allows(tok.Role) {
			s.writeProblem(w, r, errorf(http.StatusForbidden, "forbidden", "Forbidden",
				fmt.Sprintf("token %q has role %s, which may not %s %s", tok.Name, tok.Role, r.Method, r.URL.Path)))
			return
		}
		s.touchToken(key, tok)
		if st := stateOf(r.Context()); st != nil {
			st.token = &tok
		}
		next.ServeHTTP(w, r)
	})
}

// verifyToken finds the token whose SHA-256 is key: from the cache, or
// from the database within a deadline (the backend timeout on decision
// routes, so a decision is answered in time, the request timeout on the
// others).
func (s *Server) verifyToken(ctx context.Context, key [32]byte, p permission) (ratelimit.Token, error) {
	now := s.now()
	if tok, ok := s.tokens.get(key, now); ok {
		return tok, nil
	}
	gen := s.tokens.generation()
	timeout := s.cfg.RequestTimeout
	if p == permDecide {
		timeout = s.cfg.BackendTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tok, err := s.authStore.TokenByHash(lctx, key[:])
	if err != nil {
		return tok, err
	}
	s.tokens.put(key, tok, now, gen)
	return tok, nil
}

// unverifiable answers a token the database could not look up: 503 with
// Retry-After, saying which of "too slow" and "unreachable" it was. A
// gateway applies its own fail policy to it (docs/api.md).
func (s *Server) unverifiable(r *http.Request, p permission, err error) error {
	if r.Context().Err() != nil {
		return r.Context().Err() // the client went away
	}
	timeout := s.cfg.RequestTimeout
	if p == permDecide {
		timeout = s.cfg.BackendTimeout
	}
	// The same words as every other 503 (unavailableDetail: by SQLSTATE
	// and error type), except that a deadline is this lookup's own.
	why := strings.TrimSuffix(unavailableDetail(err), "; retry shortly")
	if ue := store.AsUnavailable(err); errors.Is(err, context.DeadlineExceeded) || (ue != nil && ue.Reason == store.UnavailableTimeout) {
		why = fmt.Sprintf("the database did not answer within %s", timeout)
	}
	s.log.Debug("token could not be verified", "request_id", requestID(r.Context()), "err", err)
	he := errorf(http.StatusServiceUnavailable, "token-unverifiable", "Token cannot be verified",
		"the token is not in this replica's cache and cannot be verified: "+why+"; retry shortly")
	he.retryAfter = time.Second
	return he
}

// touchToken records the token's use, at most once per touchEvery, in the
// background: a slow or locked token table must not delay the request.
func (s *Server) touchToken(key [32]byte, tok ratelimit.Token) {
	now := s.now()
	due := false
	if s.tokens.ttl > 0 {
		due = s.tokens.touchDue(key, now, touchEvery)
	} else {
		due = tok.LastUsedAt == nil || now.Sub(*tok.LastUsedAt) > touchEvery
	}
	if !due {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.authStore.TouchToken(ctx, tok.Name, now); err != nil {
			s.log.Warn("record token use", "token", tok.Name, "err", err)
		}
	}()
}

// listenTokens empties the token cache whenever a token is revoked on any
// replica (NOTIFY rlctl_tokens), and when its connection is re-established,
// since notifications sent meanwhile are lost; it makes the auth throttle
// forget a lifted lockout the same way (NOTIFY rlctl_auth_lockouts). attempted is called after
// each attempt to connect, whether it succeeded or failed.
func (s *Server) listenTokens(ctx context.Context, attempted func()) {
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenTokensOnce(ctx, func() { backoff = 250 * time.Millisecond; attempted() })
		attempted()
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("token change listener lost its connection; reconnecting", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (s *Server) listenTokensOnce(ctx context.Context, connected func()) error {
	conn, err := s.authStore.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// The connection is left in LISTEN state: close it rather than
		// hand it back to the pool.
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}()
	// The same connection hears of lifted auth lockouts: rlapi's own
	// throttle forgets what it cached of the address (the embedded
	// Enforcer hears of the gateways' through its change listener).
	// rlctl_tokens last: its LISTEN is the connection's last query, which
	// is how pg_stat_activity tells the token listener.
	for _, ch := range []string{store.AuthLockoutsChannel, store.TokensChannel} {
		if _, err := conn.Exec(ctx, "listen "+ch); err != nil {
			return err
		}
	}
	connected()
	s.tokens.invalidate()
	s.authThrottle.forget("")
	s.tokensLive.Store(true)
	defer s.tokensLive.Store(false)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == store.AuthLockoutsChannel {
			s.authThrottle.forget(n.Payload)
			continue
		}
		s.tokens.invalidate()
	}
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, detail string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="rlapi"`)
	s.writeProblem(w, r, errorf(http.StatusUnauthorized, "unauthorized", "Unauthorized", detail))
}

// clientIP is the request's client address (clientip.Resolver: the peer,
// or, when the peer is a trusted proxy, the right-most hop of the believed
// forwarding header that is not itself a trusted proxy).
func (s *Server) clientIP(r *http.Request) netip.Addr { return s.clientIPs.FromRequest(r) }

func (s *Server) trusted(a netip.Addr) bool { return s.clientIPs.Trusted(a) }

func remoteAddr(r *http.Request) netip.Addr { return clientip.Peer(r) }
