package api

import (
	"container/list"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// authThrottle locks out a client address after repeated failed
// authentications (reference 002): MaxFailures within Window lock it out
// for Lockout. It is per process on purpose: it guards this replica's token
// lookups, and a shared store would make every failure a database write.
//
// Addresses are grouped as one client: an IPv4 address alone, an IPv6
// address by its /64 (one host usually holds a whole /64, so counting
// single IPv6 addresses would let it try 2^64 times). Memory is bounded by
// capacity entries: when full, the entry that failed least recently and is
// not locked out is forgotten; an active lockout is never dropped (if every
// entry is one, the new address is not tracked until one expires).
type authThrottle struct {
	mu          sync.Mutex
	maxFailures int
	window      time.Duration
	lockout     time.Duration
	capacity    int
	clients     map[netip.Prefix]*list.Element
	// quiet holds the entries that count failures but lock nothing, least
	// recently failed first; locked holds active lockouts, soonest to
	// expire first (every lockout lasts the same).
	quiet, locked *list.List
	log           *slog.Logger
	lockouts      prometheus.Counter
}

type authFailures struct {
	key                      netip.Prefix
	first, last, lockedUntil time.Time
	count                    int
	// failures is the count that locked the address out, for the log.
	failures int
}

// maxTracked bounds the throttle's memory under a spray of addresses.
const maxTracked = 100_000

func newAuthThrottle(maxFailures int, window, lockout time.Duration, log *slog.Logger) *authThrottle {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &authThrottle{maxFailures: maxFailures, window: window, lockout: lockout, capacity: maxTracked,
		clients: map[netip.Prefix]*list.Element{}, quiet: list.New(), locked: list.New(), log: log,
		lockouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rlapi_auth_lockouts_total",
			Help: "Client addresses (IPv6: /64 networks) locked out after repeated failed authentications.",
		})}
}

// clientKey is the group an address is counted in: IPv4 (IPv4-mapped IPv6
// unmapped first) by address, IPv6 by /64.
func clientKey(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() {
		return netip.Prefix{}
	}
	if ip.Is4() {
		return netip.PrefixFrom(ip, 32)
	}
	p, _ := ip.Prefix(64)
	return p
}

// lockedFor is how long ip stays locked out (0: not locked). An expired
// lockout is released here, at the next touch, and logged.
func (t *authThrottle) lockedFor(ip netip.Addr, now time.Time) time.Duration {
	if t.maxFailures <= 0 {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.clients[clientKey(ip)]
	if e == nil {
		return 0
	}
	f := e.Value.(*authFailures)
	if f.lockedUntil.IsZero() {
		return 0
	}
	if now.Before(f.lockedUntil) {
		return f.lockedUntil.Sub(now)
	}
	t.release(e, now)
	return 0
}

// release forgets an expired lockout.
func (t *authThrottle) release(e *list.Element, now time.Time) {
	f := e.Value.(*authFailures)
	t.log.Warn("auth lockout released", "address", keyString(f.key), "locked_at", f.lockedUntil.Add(-t.lockout).UTC().Format(time.RFC3339),
		"expired_ago", now.Sub(f.lockedUntil).Round(time.Second).String())
	t.locked.Remove(e)
	delete(t.clients, f.key)
}

// succeeded forgets ip's failures: a client that authenticates is not
// guessing, and its earlier typos must not add up with later ones.
func (t *authThrottle) succeeded(ip netip.Addr) {
	if t.maxFailures <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.clients[clientKey(ip)]
	if e == nil {
		return
	}
	if f := e.Value.(*authFailures); f.lockedUntil.IsZero() {
		t.quiet.Remove(e)
		delete(t.clients, f.key)
	}
}

// fail counts one failed authentication from ip and locks it out at
// maxFailures within the window.
func (t *authThrottle) fail(ip netip.Addr, now time.Time) {
	if t.maxFailures <= 0 {
		return
	}
	key := clientKey(ip)
	if !key.IsValid() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.clients[key]
	if e != nil {
		f := e.Value.(*authFailures)
		if !f.lockedUntil.IsZero() {
			if now.Before(f.lockedUntil) {
				return // already locked out
			}
			t.release(e, now)
			e = nil
		} else if now.Sub(f.first) > t.window {
			f.first, f.count = now, 0
		}
	}
	if e == nil {
		if len(t.clients) >= t.capacity && !t.makeRoom(now) {
			return
		}
		e = t.quiet.PushBack(&authFailures{key: key, first: now})
		t.clients[key] = e
	}
	f := e.Value.(*authFailures)
	f.count++
	f.last = now
	t.quiet.MoveToBack(e)
	if f.count >= t.maxFailures {
		f.failures, f.count = f.count, 0
		f.lockedUntil = now.Add(t.lockout)
		t.quiet.Remove(e)
		t.clients[key] = t.locked.PushBack(f)
		t.lockouts.Inc()
		t.log.Warn("auth lockout", "address", keyString(key), "failures", f.failures,
			"window", t.window.String(), "duration", t.lockout.String(), "until", f.lockedUntil.UTC().Format(time.RFC3339))
	}
}

// makeRoom frees one entry: an expired lockout, else the quiet entry that
// failed least recently. It reports false when every entry is an active
// lockout.
func (t *authThrottle) makeRoom(now time.Time) bool {
	if e := t.locked.Front(); e != nil && !now.Before(e.Value.(*authFailures).lockedUntil) {
		t.release(e, now)
		return true
	}
	if e := t.quiet.Front(); e != nil {
		t.quiet.Remove(e)
		delete(t.clients, e.Value.(*authFailures).key)
		return true
	}
	return false
}

func (t *authThrottle) tracked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}

// keyString names a client group for the log: the address, or the /64.
func keyString(p netip.Prefix) string {
	if p.Addr().Is4() {
		return p.Addr().String()
	}
	return p.String()
}
