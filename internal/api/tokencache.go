package api

import (
	"container/list"
	"sync"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// tokenCache remembers verified tokens for a short time so a decision costs
// one database transaction (its counters), not two, and keeps deciding
// while the token table is slow or locked. Keys are the tokens' SHA-256, as
// stored; secrets never enter it. Only tokens the database knows are kept
// (live, expired or revoked: a revoked hash never becomes valid again),
// never unknown ones, which an attacker chooses.
//
// Revocation reaches every replica through NOTIFY rlctl_tokens
// (store.RevokeToken sends it in the revoking transaction), which empties
// the cache; the TTL bounds staleness when a notification is lost (the
// listener reconnects and empties the cache too) or a token is changed by
// hand in SQL.
type tokenCache struct {
	mu      sync.Mutex
	ttl     time.Duration
	max     int
	entries map[[32]byte]*list.Element
	order   *list.List // oldest first
	// gen counts invalidations: a lookup that began before one must not
	// store what it read.
	gen uint64
}

type cachedToken struct {
	key [32]byte
	tok ratelimit.Token
	// at is when tok was read from the database; zero once an
	// invalidation made the entry stale (hint still knows it).
	at time.Time
	// verified is when tok was read, kept through invalidations: what
	// hint goes by.
	verified time.Time
	// touchedAt is when last_used_at was last written (or read).
	touchedAt time.Time
}

// maxCachedTokens bounds the cache; the oldest entries go first.
const maxCachedTokens = 10_000

func newTokenCache(ttl time.Duration, max int) *tokenCache {
	return &tokenCache{ttl: ttl, max: max, entries: map[[32]byte]*list.Element{}, order: list.New()}
}

// get returns the cached token for key, if younger than the TTL and not
// invalidated since. An entry past it stays, stale, for hint, until the
// next read of the token replaces it or the oldest entries make room.
func (c *tokenCache) get(key [32]byte, now time.Time) (ratelimit.Token, bool) {
	return c.read(key, func(ct *cachedToken) bool {
		return !ct.at.IsZero() && now.Sub(ct.at) < c.ttl && !now.Before(ct.at)
	})
}

// read returns key's token when the cache holds it and use says the entry
// may be used.
func (c *tokenCache) read(key [32]byte, use func(*cachedToken) bool) (ratelimit.Token, bool) {
	if c.ttl <= 0 {
		return ratelimit.Token{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil || !use(e.Value.(*cachedToken)) {
		return ratelimit.Token{}, false
	}
	return e.Value.(*cachedToken).tok, true
}

// staleHintFor is how long after its last read a token stays a hint.
const staleHintFor = time.Hour

// hint returns what the database said of key when it was last read, fresh
// or stale (past the TTL, or invalidated since), if that was within
// staleHintFor. It is never an answer about the token, only a hint for
// admission: a token that was valid a moment ago is, most likely, still;
// whoever admits on it verifies the token again (get misses, so the
// database is read).
func (c *tokenCache) hint(key [32]byte, now time.Time) (ratelimit.Token, bool) {
	return c.read(key, func(ct *cachedToken) bool {
		return now.Sub(ct.verified) < staleHintFor && !now.Before(ct.verified)
	})
}

// generation is read before a lookup and handed to put.
func (c *tokenCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put stores a token read from the database, unless the cache was
// invalidated since the lookup began (generation gen).
func (c *tokenCache) put(key [32]byte, tok ratelimit.Token, now time.Time, gen uint64) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	touched := time.Time{}
	if tok.LastUsedAt != nil {
		touched = *tok.LastUsedAt
	}
	if e := c.entries[key]; e != nil {
		ct := e.Value.(*cachedToken)
		ct.tok, ct.at, ct.verified = tok, now, now
		ct.touchedAt = later(ct.touchedAt, touched)
		c.order.MoveToBack(e)
		return
	}
	for len(c.entries) >= c.max {
		front := c.order.Front()
		c.order.Remove(front)
		delete(c.entries, front.Value.(*cachedToken).key)
	}
	c.entries[key] = c.order.PushBack(&cachedToken{key: key, tok: tok, at: now, verified: now, touchedAt: touched})
}

// touchDue reports whether last_used_at should be written now (at most once
// per every), and records that it is being written. Tokens not in the cache
// are touched by the caller's lookup rule.
func (c *tokenCache) touchDue(key [32]byte, now time.Time, every time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		return false
	}
	ct := e.Value.(*cachedToken)
	if now.Sub(ct.touchedAt) <= every {
		return false
	}
	ct.touchedAt = now
	return true
}

// invalidate makes every token stale: one changed somewhere, so each is
// read again before it is trusted (get misses). What was read of them
// stays a hint (hint), so that a revocation somewhere does not make every
// gateway's burst of calls wait for an admission slot.
func (c *tokenCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, e := range c.entries {
		e.Value.(*cachedToken).at = time.Time{}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
