package api

import (
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestTokenCacheBoundsAndInvalidation(t *testing.T) {
	t.Parallel()
	c := newTokenCache(10*time.Second, 3)
	key := func(i byte) [32]byte { return [32]byte{i} }
	for i := range byte(5) {
		c.put(key(i), ratelimit.Token{Name: string('a' + rune(i))}, t0, c.generation())
	}
	if len(c.entries) != 3 || c.order.Len() != 3 {
		t.Fatalf("cache holds %d entries, capacity 3", len(c.entries))
	}
	if _, ok := c.get(key(0), t0); ok {
		t.Error("the oldest entry survived eviction")
	}
	if tok, ok := c.get(key(4), t0); !ok || tok.Name != "e" {
		t.Errorf("newest entry: %+v %v", tok, ok)
	}
	if _, ok := c.get(key(4), t0.Add(10*time.Second)); ok {
		t.Error("an entry outlived its TTL")
	}
	// A lookup that began before an invalidation must not store what it read.
	gen := c.generation()
	c.invalidate()
	c.put(key(7), ratelimit.Token{Name: "stale"}, t0, gen)
	if _, ok := c.get(key(7), t0); ok {
		t.Error("a lookup from before the invalidation was cached")
	}
	// An invalidation makes every entry stale: get misses each, so it is
	// read again before it is trusted, and hint still says what was read
	// (for admission only), for an hour after that read.
	for i := byte(2); i <= 4; i++ {
		if _, ok := c.get(key(i), t0); ok {
			t.Errorf("entry %d still fresh after invalidate", i)
		}
		if tok, ok := c.hint(key(i), t0.Add(time.Minute)); !ok || tok.Name != string('a'+rune(i)) {
			t.Errorf("entry %d: hint %+v %v after invalidate, want what was read", i, tok, ok)
		}
	}
	if _, ok := c.hint(key(4), t0.Add(staleHintFor)); ok {
		t.Error("a hint outlived staleHintFor")
	}
	if _, ok := c.hint(key(9), t0); ok {
		t.Error("a hint for a token never read")
	}
	// last_used_at is written at most once per interval.
	c.put(key(8), ratelimit.Token{Name: "t"}, t0, c.generation())
	if !c.touchDue(key(8), t0, time.Minute) {
		t.Error("a token never used was not touched")
	}
	if c.touchDue(key(8), t0.Add(30*time.Second), time.Minute) {
		t.Error("touched twice within a minute")
	}
	if !c.touchDue(key(8), t0.Add(61*time.Second), time.Minute) {
		t.Error("not touched after a minute")
	}
}
