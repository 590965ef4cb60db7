package api

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// authThrottle locks out a client address after repeated failed
// authentications (the brute-force defence docs/operations.md describes): MaxFailures unknown tokens within
// Window lock it out for Lockout. It is pkg/auththrottle's Throttle
// (scope "rlapi") over the counter store of the decisions' pool, so every
// replica sharing the database shares the count and the lockout: N
// replicas do not give N times the attempts (docs/operations.md, "Failed
// authentications").
//
// Addresses are grouped as one client: an IPv4 address alone, an IPv6
// address by its /64 (one host usually holds a whole /64, so counting
// single IPv6 addresses would let it try 2^64 times). What a replica
// caches is bounded by capacity entries: when full, the quiet entry
// touched least recently is forgotten; an active lockout is never dropped
// (and the database holds it anyway).
type authThrottle struct {
	t        *auththrottle.Throttle // nil: off
	log      *slog.Logger
	lockouts prometheus.Counter
	active   prometheus.Collector
	// record, when set, adds a lockout to the record of violations
	// (rl_events, the SIEM log), as gateways' lockouts are.
	record func(ratelimit.Event)
}

// recordTo records this throttle's lockouts in the record of violations:
// kind auth_lockout_started, severity high, subject ip:<address or
// prefix>, the client address, the failures that locked it, and target
// "rlapi" (the management API was the endpoint, not a gateway's).
func (a *authThrottle) recordTo(rec EventRecorder) {
	a.record = func(ev ratelimit.Event) {
		if err := rec.RecordEvent(ev); err != nil {
			a.log.Warn("auth lockout: could not record the event", "err", err)
		}
	}
}

// maxTracked bounds the addresses a replica caches under a spray.
const maxTracked = 100_000

// authThrottleScope separates rlapi's own count from the gateways' in a
// shared counter store.
const authThrottleScope = "rlapi"

func newAuthThrottle(counters enforce.CounterStore, maxFailures int, window, lockout time.Duration, capacity int,
	now func() time.Time, log *slog.Logger) *authThrottle {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a := &authThrottle{log: log, lockouts: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rlapi_auth_lockouts_total",
		Help: "Client addresses (IPv6: /64 networks) this replica locked out after repeated failed authentications.",
	})}
	a.active = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rlapi_auth_lockouts_active",
		Help: "Lockouts for failed authentications this replica knows of and that have not ended yet.",
	}, func() float64 {
		if a.t == nil {
			return 0
		}
		_, n := a.t.Tracked()
		return float64(n)
	})
	if maxFailures < 0 {
		return a
	}
	t, err := auththrottle.New(counters, auththrottle.Options{Scope: authThrottleScope, MaxFailures: maxFailures,
		Window: window, Lockout: lockout, MaxTracked: capacity, Now: now, OnEvent: a.event})
	if err != nil {
		// rlapi checks its flags before New; a Config built in code with
		// settings the throttle refuses takes the defaults.
		log.Error("auth lockout settings refused; using 5 failures in 1m for 5m", "err", err)
		t, _ = auththrottle.New(counters, auththrottle.Options{Scope: authThrottleScope, MaxTracked: capacity, Now: now, OnEvent: a.event})
	}
	a.t = t
	return a
}

func (a *authThrottle) event(ev auththrottle.Event) {
	if ev.Kind == auththrottle.EventLockoutStarted {
		a.lockouts.Inc()
		if a.record != nil {
			subject := enforce.CallerIP + ":" + ev.Address
			a.record(ratelimit.Event{Kind: ratelimit.EventAuthLockoutStarted, Subject: subject, Caller: subject,
				ClientIP: ev.ClientIP, Target: authThrottleScope, Limit: int64(ev.Failures)})
		}
	}
	auththrottle.LogEvent(a.log, ev)
}

// lockedFor is how long ip stays locked out (0: not locked, or the
// database cannot say: the token lookup then fails on its own).
func (a *authThrottle) lockedFor(ctx context.Context, ip netip.Addr) time.Duration {
	if a.t == nil {
		return 0
	}
	st, err := a.t.Check(ctx, ip)
	if err != nil {
		a.log.Debug("auth lockout could not be checked", "err", err)
		return 0
	}
	if !st.Locked {
		return 0
	}
	return st.RetryAfter
}

// succeeded forgets ip's failures: a client that authenticates is not
// guessing, and its earlier typos must not add up with later ones.
func (a *authThrottle) succeeded(ctx context.Context, ip netip.Addr) {
	a.report(ctx, ip, auththrottle.Success)
}

// fail counts one failed authentication from ip and locks it out at
// MaxFailures within the window.
func (a *authThrottle) fail(ctx context.Context, ip netip.Addr) {
	a.report(ctx, ip, auththrottle.Failure)
}

func (a *authThrottle) report(ctx context.Context, ip netip.Addr, outcome auththrottle.Outcome) {
	if a.t == nil {
		return
	}
	if _, err := a.t.Report(ctx, ip, "", outcome); err != nil {
		a.log.Warn("auth lockout: could not record an authentication", "outcome", outcome, "err", err)
	}
}

// tracked is how many addresses this replica caches.
func (a *authThrottle) tracked() int {
	if a.t == nil {
		return 0
	}
	n, _ := a.t.Tracked()
	return n
}

// forget drops what this replica cached of a lifted lockout: payload is a
// store.AuthLockoutsChannel notice (<scope>|<address key>), "" (or one it
// cannot read) every address. Another scope's notice is not this
// throttle's.
func (a *authThrottle) forget(payload string) {
	if a.t == nil {
		return
	}
	scope, key, ok := counterkey.ParseAuthLockoutID(payload)
	switch {
	case !ok:
		a.t.Forget()
	case scope == authThrottleScope:
		a.t.Forget(key)
	}
}
