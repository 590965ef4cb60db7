package enforce

import (
	"context"
	"net/netip"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// ReasonAuthLocked: the client address is locked out for repeated failed
// authentications (Options.AuthThrottle); RetryAfter says for how long.
// Gateways answer it 429 with Retry-After, before verifying credentials.
const ReasonAuthLocked = "auth-locked"

// Reasons an auth event is logged for (events.go aggregates them as it
// does throttles: one line per address and interval at most).
const (
	eventAuthLocked         = "auth_locked"
	eventAuthLockoutStarted = EventAuthLockoutStarted
	eventAuthLockoutEnded   = EventAuthLockoutEnded
)

// AuthReport is one authentication a gateway reports: its client address,
// optionally the identity it claimed, and its outcome.
type AuthReport struct {
	ClientIP string
	Identity string
	Outcome  AuthOutcome
}

// startAuthThrottle builds the throttle Options.AuthThrottle asks for.
func (e *Enforcer) startAuthThrottle() error {
	if e.opts.AuthThrottle == nil {
		return nil
	}
	o := *e.opts.AuthThrottle
	if o.Now == nil {
		o.Now = e.now
	}
	if o.IPv6Prefix == 0 {
		o.IPv6Prefix = e.opts.IPv6Prefix
	}
	if o.BackendTimeout <= 0 {
		o.BackendTimeout = e.opts.BackendTimeout
	}
	lockouts := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rlctl_enforce_auth_lockouts_total",
		Help: "Client addresses (IPv6: prefixes) this replica locked out for failed authentications, by scope."}, []string{"scope"})
	if e.opts.Registerer != nil {
		if err := e.opts.Registerer.Register(lockouts); err != nil {
			return err
		}
	}
	next := o.OnEvent
	o.OnEvent = func(ev AuthEvent) {
		if ev.Kind == EventAuthLockoutStarted {
			lockouts.WithLabelValues(ev.Scope).Inc()
		}
		e.events.record(event{reason: ev.Kind, caller: CallerIP + ":" + ev.Address, username: ev.Identity,
			limit: int64(ev.Failures), retryAfter: ev.Lockout, scope: ev.Scope, until: ev.Until})
		if next != nil {
			next(ev)
		}
	}
	t, err := NewAuthThrottle(e.counters, o)
	if err != nil {
		return err
	}
	e.auth = t
	return nil
}

// AuthThrottle is the Enforcer's failed-credential throttle (nil when
// Options.AuthThrottle was not set).
func (e *Enforcer) AuthThrottle() *AuthThrottle { return e.auth }

// ReportAuth records an authentication a gateway made (see AuthThrottle.
// Report). The client address must be valid (normalize it first:
// NormalizeAuthReport). Without Options.AuthThrottle it does nothing.
func (e *Enforcer) ReportAuth(ctx context.Context, r AuthReport) (AuthStatus, error) {
	if e.auth == nil {
		return AuthStatus{}, nil
	}
	a, err := netip.ParseAddr(r.ClientIP)
	if err != nil {
		return AuthStatus{}, err
	}
	return e.auth.Report(ctx, a, r.Identity, r.Outcome)
}

// AuthLocked reports whether clientIP is locked out for failed
// authentications: what a gateway asks before it verifies credentials.
func (e *Enforcer) AuthLocked(ctx context.Context, clientIP string) (AuthStatus, error) {
	if e.auth == nil {
		return AuthStatus{}, nil
	}
	a := clientAddr(clientIP)
	if !a.IsValid() {
		return AuthStatus{}, nil
	}
	return e.auth.Check(ctx, a)
}

// authFirst applies the auth lockout of the call's address (ip). From
// memory when this replica knows it: locked is then its answer. Otherwise
// the store is asked, and the question costs no round trip of its own when
// the call's counters make one: peek is then the address's key, for take
// to ask in that round trip (or settleAuth, for a call that ends before
// its counters). A call that finds the address locked there gives back
// what it took (giveBack), so the only cost of asking late is that
// another call may, for that round trip, see counts a refused call holds:
// it may be refused, never admitted past a limit (docs/design/lockouts.md,
// "Asked in the call's round trip"). Over a store that decides calls in
// memory (CounterCapabilities.Local: a decision may make no round trip)
// or one that cannot give back, the store is asked first, on its own.
func (e *Enforcer) authFirst(ctx context.Context, c Call, ip netip.Addr) (peek string, d Decision, locked bool) {
	if e.auth == nil || !ip.IsValid() {
		return "", Decision{}, false
	}
	st, key, known := e.auth.cachedCheck(ip, e.auth.now())
	switch {
	case known && st.Locked:
		return "", e.authLockedDecision(c, key, st), true
	case known:
		return "", Decision{}, false
	case !e.local && e.canGiveBack:
		return key, Decision{}, false
	}
	d, locked = e.settleAuth(ctx, c, key)
	return "", d, locked
}

// settleAuth asks the store about peek (an address's key; "": nothing to
// ask) on its own, and decides the call if it is locked. A store that
// cannot say leaves the call to the rest of the decision.
func (e *Enforcer) settleAuth(ctx context.Context, c Call, peek string) (Decision, bool) {
	if peek == "" {
		return Decision{}, false
	}
	st, err := e.auth.ask(ctx, peek, e.auth.now())
	if err != nil {
		e.metrics.errors.WithLabelValues("auth").Inc()
		return Decision{}, false
	}
	if !st.Locked {
		return Decision{}, false
	}
	return e.authLockedDecision(c, peek, st), true
}

// authLockedDecision refuses a call from the locked-out address key.
func (e *Enforcer) authLockedDecision(c Call, key string, st AuthStatus) Decision {
	e.metrics.checks.WithLabelValues("auth_locked").Inc()
	e.events.record(event{reason: eventAuthLocked, username: c.Username, clientID: c.ClientID, targetType: c.TargetType,
		target: c.TargetName, caller: CallerIP + ":" + key, retryAfter: st.RetryAfter})
	return Decision{Allowed: false, Reason: ReasonAuthLocked, RetryAfter: st.RetryAfter}
}

// giveBack returns what an allowed call took (res, the answer to req)
// after its address was found locked in the same round trip. A store that
// fails to take it back leaves it counted until the window ends or the
// tokens drip back: stricter, never looser.
func (e *Enforcer) giveBack(req TakeRequest, res TakeResult) {
	var rs []Return
	for i, g := range req.Gates {
		if res.Room[i] { // an allowed call takes from every gate with room
			rs = append(rs, Return{Gate: g, Units: req.Cost, Taken: req.Now, Now: req.Now})
		}
	}
	if len(rs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.opts.BackendTimeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	if err := e.counters.ReturnUnused(ctx, rs, deadline); err != nil {
		e.metrics.errors.WithLabelValues("auth").Inc()
		e.log.Warn("auth lockout: could not give back what a refused call took", "gates", len(rs), "err", err)
	}
}

// NormalizeAuthReport checks a report: a valid client address, a known
// outcome, an identity of at most 256 bytes. The errors name the field
// (client_ip, outcome, identity), as Call.Normalize's do.
func NormalizeAuthReport(r AuthReport) (AuthReport, error) {
	var fields []FieldError
	if r.ClientIP == "" {
		fields = append(fields, FieldError{Field: "client_ip", Message: "client_ip: required (the client's address, IPv4 or IPv6)"})
	} else if a, problem := normalizeClientIP(r.ClientIP); problem != "" {
		fields = append(fields, FieldError{Field: "client_ip", Message: "client_ip: " + problem})
	} else {
		r.ClientIP = a
	}
	switch r.Outcome {
	case AuthFailure, AuthSuccess, AuthExpired:
	case "":
		fields = append(fields, FieldError{Field: "outcome", Message: "outcome: required (failure, success or expired)"})
	default:
		fields = append(fields, FieldError{Field: "outcome", Message: "outcome: must be failure, success or expired (got " + strconv.Quote(string(r.Outcome)) + ")"})
	}
	if len(r.Identity) > 256 {
		fields = append(fields, FieldError{Field: "identity", Message: "identity: must be at most 256 bytes"})
	}
	if len(fields) > 0 {
		return r, &CallError{Fields: fields}
	}
	return r, nil
}

// AuthLockedRequest is AuthLocked for a request a gateway answers before
// it verifies credentials (pkg/httpgate's AuthMiddleware), path naming what
// the request asked for: a locked address is counted and logged as a call
// Check refuses for it is, and a store that cannot say is counted as an
// auth store failure (its error returned: the gateway lets the request
// pass on to its authentication). An invalid address, or no
// Options.AuthThrottle, is never locked.
func (e *Enforcer) AuthLockedRequest(ctx context.Context, addr netip.Addr, path string) (AuthStatus, error) {
	if e.auth == nil || !addr.IsValid() {
		return AuthStatus{}, nil
	}
	st, err := e.auth.Check(ctx, addr)
	if err != nil {
		e.metrics.errors.WithLabelValues("auth").Inc()
		return st, err
	}
	if st.Locked {
		e.metrics.checks.WithLabelValues("auth_locked").Inc()
		e.events.record(event{reason: eventAuthLocked, target: path, caller: CallerIP + ":" + e.auth.Key(addr), retryAfter: st.RetryAfter})
	}
	return st, nil
}
