package auththrottle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The throttle as an enforce.Guard: an Enforcer built with it as
// Options.Guard refuses a call from a locked-out address
// enforce.ReasonAuthLocked before anything else, administrators included
// (its credentials are not to be verified while it is locked). What this
// replica does not know yet is asked in the round trip of the call's
// counters (docs/design/lockouts.md, "Asked in the call's round trip").
// Lockouts starting and ending, and the calls refused, are written to the
// Enforcer's aggregated log, and lockouts starting to its record of
// violations, as they were when the throttle lived in the core.

var _ enforce.Guard = (*Throttle)(nil)

// Kinds of the aggregated log's lines about refused calls.
const eventLocked = "auth_locked"

// hostOf boxes the Enforcer's GuardHost.
type hostOf struct{ h enforce.GuardHost }

// Name labels the throttle's store failures: rlctl_enforce_errors_total
// {kind="auth"}.
func (t *Throttle) Name() string { return "auth" }

// Bind is called by enforce.New: the Enforcer t guards counts and logs
// what t decides outside its decisions. A throttle guards one Enforcer.
func (t *Throttle) Bind(h enforce.GuardHost) error {
	if !t.host.CompareAndSwap(nil, &hostOf{h}) {
		return errors.New("auththrottle: the throttle already guards an Enforcer; build one per Enforcer")
	}
	return nil
}

// bound is the Enforcer's host (nil: none).
func (t *Throttle) bound() enforce.GuardHost {
	if p := t.host.Load(); p != nil {
		return p.h
	}
	return nil
}

// Screen refuses c when its address ip is a lockout this replica knows
// of, and asks the store when it does not know (enforce.Guard).
func (t *Throttle) Screen(c enforce.Call, ip netip.Addr) enforce.Screening {
	now := t.now()
	st, key, known := t.cachedCheck(ip, now)
	switch {
	case known && st.Locked:
		return enforce.Screening{Refused: true, Refusal: t.refusal(c, key, st)}
	case known:
		return enforce.Screening{}
	}
	req, gen := t.peekRequest(key, now)
	return enforce.Screening{Question: &enforce.Question{
		Request: req,
		Answer: func(res enforce.TakeResult) (enforce.Refusal, bool) {
			st := t.learn(key, res, now, gen)
			return t.refusal(c, key, st), st.Locked
		},
		Ask: func(ctx context.Context) (enforce.Refusal, bool) {
			st, err := t.ask(ctx, key, t.now())
			if err != nil {
				if h := t.bound(); h != nil {
					h.Failed()
				}
				return enforce.Refusal{}, false
			}
			return t.refusal(c, key, st), st.Locked
		},
	}}
}

// refusal is the refusal of call c from the locked-out address key.
func (t *Throttle) refusal(c enforce.Call, key string, st Status) enforce.Refusal {
	return enforce.Refusal{Decision: enforce.Decision{Allowed: false, Reason: enforce.ReasonAuthLocked, RetryAfter: st.RetryAfter},
		Outcome: eventLocked, Event: lockedEvent(c.Username, c.ClientID, c.TargetType, c.TargetName, key, st)}
}

// lockedEvent is the aggregated log's line about calls refused from key.
func lockedEvent(username, clientID, targetType, target, key string, st Status) enforce.GuardEvent {
	caller := enforce.CallerIP + ":" + key
	return enforce.GuardEvent{Kind: eventLocked, Message: "calls denied: address locked out for failed authentications",
		Caller: caller, Username: username, ClientID: clientID, TargetType: targetType, Target: target,
		Attrs: []slog.Attr{slog.String("caller", caller), slog.String("username", username), slog.String("client_id", clientID),
			slog.String("target_type", targetType), slog.String("target", target), slog.Float64("retry_after_s", st.RetryAfter.Seconds())}}
}

// Changed forgets what t cached of the addresses a lifted-lockout notice
// names in its scope (ch.All: every address), so that the next call from
// them asks the counter store, where the lockout is gone: a lift is
// honoured at once rather than when the lockout would have ended
// (enforce.Guard).
func (t *Throttle) Changed(ch enforce.Change) {
	if ch.Table != enforce.TableAuthLockouts && ch.Table != "" {
		return
	}
	if ch.All {
		t.Forget()
		return
	}
	var keys []string
	for _, id := range ch.IDs {
		if scope, key, ok := counterkey.ParseAuthLockoutID(id); ok && scope == t.opts.Scope {
			keys = append(keys, key)
		}
	}
	if len(keys) > 0 {
		t.Forget(keys...)
	}
}

// CheckRequest is Check for a request a gateway answers before it
// verifies credentials (pkg/httpgate's AuthMiddleware), path naming what
// the request asked for: a locked address is counted and logged by the
// Enforcer t guards as a call its decision refuses is, and a store that
// cannot say is counted as a store failure (its error returned: the
// gateway lets the request pass on to its authentication). An invalid
// address is never locked.
func (t *Throttle) CheckRequest(ctx context.Context, addr netip.Addr, path string) (Status, error) {
	if !addr.IsValid() {
		return Status{}, nil
	}
	st, err := t.Check(ctx, addr)
	h := t.bound()
	if err != nil {
		if h != nil {
			h.Failed()
		}
		return st, err
	}
	if st.Locked && h != nil {
		h.Refused(enforce.Refusal{Decision: enforce.Decision{Reason: enforce.ReasonAuthLocked, RetryAfter: st.RetryAfter},
			Outcome: eventLocked, Event: lockedEvent("", "", "", path, t.Key(addr), st)})
	}
	return st, nil
}

// emit tells of ev: the lockouts metric, the record of violations
// (Options.Record) for a lockout started, the Enforcer t guards (its
// aggregated log), then Options.OnEvent.
func (t *Throttle) emit(ev Event) {
	if ev.Kind == EventLockoutStarted {
		t.lockouts.WithLabelValues(ev.Scope).Inc()
		if t.opts.Record != nil && ev.Address != "" {
			caller := enforce.CallerIP + ":" + ev.Address
			// A refusal would be a bug of ours (the kind and subject are
			// valid); the lockout itself holds either way.
			_ = t.opts.Record(ratelimit.Event{Kind: ratelimit.EventAuthLockoutStarted, Subject: caller, Caller: caller, Limit: int64(ev.Failures)})
		}
	}
	if h := t.bound(); h != nil {
		h.Log(guardEvent(ev))
	}
	if t.opts.OnEvent != nil {
		t.opts.OnEvent(ev)
	}
}

// guardEvent is ev's line in the Enforcer's aggregated log: kinds
// auth_lockout_started and auth_lockout_ended.
func guardEvent(ev Event) enforce.GuardEvent {
	caller := enforce.CallerIP + ":" + ev.Address
	g := enforce.GuardEvent{Kind: ev.Kind, Caller: caller, Username: ev.Identity, Limit: int64(ev.Failures)}
	switch ev.Kind {
	case EventLockoutStarted:
		g.Message = "auth lockout"
		g.Attrs = []slog.Attr{slog.String("scope", ev.Scope), slog.String("caller", caller), slog.String("identity", ev.Identity),
			slog.Int("failures", ev.Failures), slog.String("duration", ev.Lockout.String()), slog.String("until", ev.Until.UTC().Format(time.RFC3339))}
	case EventLockoutEnded:
		g.Message = "auth lockout released"
		g.Attrs = []slog.Attr{slog.String("scope", ev.Scope), slog.String("caller", caller), slog.String("ended", ev.Until.UTC().Format(time.RFC3339))}
	}
	return g
}

// Report is one authentication a gateway reports: its client address,
// optionally the identity it claimed, and its outcome.
type Report struct {
	ClientIP string
	Identity string
	Outcome  Outcome
}

// ReportAuth records an authentication a gateway made (see Report). The
// client address must be valid (normalize it first: NormalizeReport).
func (t *Throttle) ReportAuth(ctx context.Context, r Report) (Status, error) {
	a, err := netip.ParseAddr(r.ClientIP)
	if err != nil {
		return Status{}, fmt.Errorf("report auth: %w", err)
	}
	return t.Report(ctx, a, r.Identity, r.Outcome)
}

// Locked reports whether clientIP is locked out for failed
// authentications: what a gateway asks before it verifies credentials.
// An address that is not valid is never locked.
func (t *Throttle) Locked(ctx context.Context, clientIP string) (Status, error) {
	a, err := netip.ParseAddr(clientIP)
	if err != nil || a.Zone() != "" {
		return Status{}, nil
	}
	return t.Check(ctx, a.Unmap())
}

// NormalizeReport checks a report: a valid client address, a known
// outcome, an identity of at most 256 bytes. The errors name the field
// (client_ip, outcome, identity), as enforce.Call.Normalize's do.
func NormalizeReport(r Report) (Report, error) {
	var fields []enforce.FieldError
	if r.ClientIP == "" {
		fields = append(fields, enforce.FieldError{Field: "client_ip", Message: "client_ip: required (the client's address, IPv4 or IPv6)"})
	} else if a, problem := normalizeClientIP(r.ClientIP); problem != "" {
		fields = append(fields, enforce.FieldError{Field: "client_ip", Message: "client_ip: " + problem})
	} else {
		r.ClientIP = a
	}
	switch r.Outcome {
	case Failure, Success, Expired:
	case "":
		fields = append(fields, enforce.FieldError{Field: "outcome", Message: "outcome: required (failure, success or expired)"})
	default:
		fields = append(fields, enforce.FieldError{Field: "outcome", Message: "outcome: must be failure, success or expired (got " + strconv.Quote(string(r.Outcome)) + ")"})
	}
	if len(r.Identity) > 256 {
		fields = append(fields, enforce.FieldError{Field: "identity", Message: "identity: must be at most 256 bytes"})
	}
	if len(fields) > 0 {
		return r, &enforce.CallError{Fields: fields}
	}
	return r, nil
}

// normalizeClientIP is enforce.Call.Normalize's client_ip rule: an IPv4
// or IPv6 address without zone or port, in canonical form (an
// IPv4-mapped IPv6 address unmapped).
func normalizeClientIP(s string) (canonical, problem string) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		if len(s) > 64 {
			s = s[:64] + "..."
		}
		return "", fmt.Sprintf("must be an IPv4 or IPv6 address without port or zone, such as 203.0.113.7 or 2001:db8::1 (got %q)", s)
	}
	return a.Unmap().String(), ""
}
