package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
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

type actorKey struct{}

// actorHolderKey carries the authenticated name back to the access log.
type actorHolderKey struct{}

type actorHolder struct{ name string }

// actorName is the authenticated token's name ("" before authentication).
func actorName(ctx context.Context) string {
	t, _ := ctx.Value(actorKey{}).(*ratelimit.Token)
	if t == nil {
		return ""
	}
	return t.Name
}

// touchEvery bounds how often a token's last_used_at is written: once a
// minute is precise enough to spot unused tokens and keeps reads read-only.
const touchEvery = time.Minute

// authenticate checks the bearer token and the role the route needs.
func (s *Server) authenticate(p permission, next http.Handler) http.Handler {
	if p == permPublic {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := s.clientIP(r)
		if wait := s.authThrottle.lockedFor(ip, s.now()); wait > 0 {
			he := errorf(http.StatusTooManyRequests, "too-many-auth-failures", "Too many failed authentications",
				fmt.Sprintf("too many failed authentications from this address; retry in %ds", int(wait.Seconds()+0.999)))
			he.retryAfter = wait
			s.writeProblem(w, r, he)
			return
		}
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(secret) == "" {
			s.unauthorized(w, r, ip, "missing bearer token: send 'Authorization: Bearer <token>'")
			return
		}
		tok, err := s.store.TokenByHash(r.Context(), token.Hash(secret))
		switch {
		case errors.Is(err, store.ErrNotFound):
			s.unauthorized(w, r, ip, "invalid token")
			return
		case err != nil:
			s.writeProblem(w, r, err)
			return
		case tok.RevokedAt != nil:
			s.unauthorized(w, r, ip, "token has been revoked")
			return
		case tok.ExpiresAt != nil && !s.now().Before(*tok.ExpiresAt):
			s.unauthorized(w, r, ip, "token has expired")
			return
		}
		if !p.allows(tok.Role) {
			s.writeProblem(w, r, errorf(http.StatusForbidden, "forbidden", "Forbidden",
				fmt.Sprintf("token %q has role %s, which may not %s %s", tok.Name, tok.Role, r.Method, r.URL.Path)))
			return
		}
		if tok.LastUsedAt == nil || s.now().Sub(*tok.LastUsedAt) > touchEvery {
			if err := s.store.TouchToken(r.Context(), tok.Name, s.now()); err != nil {
				s.log.Warn("record token use", "token", tok.Name, "err", err)
			}
		}
		if h, ok := r.Context().Value(actorHolderKey{}).(*actorHolder); ok {
			h.name = tok.Name
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), actorKey{}, &tok)))
	})
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, ip netip.Addr, detail string) {
	s.authThrottle.fail(ip, s.now())
	w.Header().Set("WWW-Authenticate", `Bearer realm="rlapi"`)
	s.writeProblem(w, r, errorf(http.StatusUnauthorized, "unauthorized", "Unauthorized", detail))
}

// clientIP is the peer's address, or, when the peer is a trusted proxy, the
// right-most address in X-Forwarded-For that is not itself a trusted proxy:
// the left-most entries are whatever the client chose to send.
func (s *Server) clientIP(r *http.Request) netip.Addr {
	peer := remoteAddr(r)
	if !s.trusted(peer) {
		return peer
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !s.trusted(a) {
			return a
		}
	}
	return peer
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func remoteAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

// authThrottle locks out a client address after repeated failed
// authentications (reference 002): MaxFailures within Window lock it out
// for Lockout. It is per process on purpose: it guards this replica's token
// lookups, and a shared store would make every failure a database write.
type authThrottle struct {
	mu          sync.Mutex
	maxFailures int
	window      time.Duration
	lockout     time.Duration
	clients     map[netip.Addr]*authFailures
}

type authFailures struct {
	first, lockedUntil time.Time
	count              int
}

// maxTracked bounds the throttle's memory under a spray of addresses.
const maxTracked = 100_000

func newAuthThrottle(maxFailures int, window, lockout time.Duration) *authThrottle {
	return &authThrottle{maxFailures: maxFailures, window: window, lockout: lockout, clients: map[netip.Addr]*authFailures{}}
}

func (t *authThrottle) lockedFor(ip netip.Addr, now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.clients[ip]
	if f == nil || !now.Before(f.lockedUntil) {
		return 0
	}
	return f.lockedUntil.Sub(now)
}

func (t *authThrottle) fail(ip netip.Addr, now time.Time) {
	if t.maxFailures <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.clients[ip]
	if f == nil || now.Sub(f.first) > t.window {
		if f == nil && len(t.clients) >= maxTracked {
			t.prune(now)
		}
		f = &authFailures{first: now}
		t.clients[ip] = f
	}
	f.count++
	if f.count >= t.maxFailures {
		f.lockedUntil = now.Add(t.lockout)
		f.count = 0
		f.first = now
	}
}

// prune drops entries that no longer lock or count; if all still do, it
// drops everything rather than grow without bound.
func (t *authThrottle) prune(now time.Time) {
	for ip, f := range t.clients {
		if now.Sub(f.first) > t.window && !now.Before(f.lockedUntil) {
			delete(t.clients, ip)
		}
	}
	if len(t.clients) >= maxTracked {
		clear(t.clients)
	}
}
