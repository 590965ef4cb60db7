package api

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/auththrottle"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/wire"
)

// Listing and lifting failed-credential lockouts (docs/api.md, "Auth
// lockouts"): GET /api/auth-lockouts lists the addresses the throttles
// count or lock, rlapi's own (scope rlapi) and the gateways' (scope
// gateway); DELETE /api/auth-lockouts/{address} deletes an address's
// counters in one audited transaction whose NOTIFY makes every replica
// forget what it cached, so the lift holds everywhere at once. The state
// shown is read through each scope's throttle (Peek: the gates a
// decision takes), never recomputed here.

// Scopes of the failed-credential throttles rlapi knows.
const (
	authScopeRlapi   = authThrottleScope
	authScopeGateway = "gateway"
)

// authThrottleOf is the throttle of scope, nil when this API lists and
// lifts none for it here (off, no Enforcer, or the throttles counting
// outside the database's rl_counters).
func (s *Server) authThrottleOf(scope string) *auththrottle.Throttle {
	if s.authCountersElsewhere() != "" {
		return nil
	}
	switch scope {
	case authScopeRlapi:
		return s.authThrottle.t
	case authScopeGateway:
		if s.enforcer == nil {
			return nil
		}
		return s.gatewayThrottle
	}
	return nil
}

// authCountersElsewhere names the counter store the throttles count in
// (rlapi --counters-url: rlapi's own and the gateways' alike) when it is
// not the database's rl_counters, which this API lists and lifts in; ""
// when it is.
//
// It is judged by the store the throttles count in (Opts.Counters), not
// by the counter admin: a lift deletes rows of rl_counters, and must not
// answer 200 while the lockout lives on in another store.
func (s *Server) authCountersElsewhere() string {
	if s.countersBackend == "" || s.countersBackend == "postgres" {
		return ""
	}
	return s.countersBackend
}

// unlistedScopes say why no scope is listed, when the throttles count
// elsewhere (nil: both are listed).
func (s *Server) unlistedScopes() []wire.UnlistedScope {
	where := s.authCountersElsewhere()
	if where == "" {
		return nil
	}
	reason := "the failed-credential throttles count in " + where +
		" (--counters-url), where this API does not list lockouts; they end on their own"
	return []wire.UnlistedScope{{Scope: authScopeGateway, Reason: reason}, {Scope: authScopeRlapi, Reason: reason}}
}

// authLockoutsElsewhere is the 501 of a lift when the throttles count
// outside the database: rlapi cannot lift there, and says so rather than
// lift nothing.
func authLockoutsElsewhere(where string) *httpError {
	return errorf(http.StatusNotImplemented, "counters-elsewhere", "Lockouts are not in PostgreSQL",
		"this rlapi counts failed authentications in "+where+" (--counters-url): lockouts there cannot be lifted through this API; they end on their own")
}

// peekAuth reads the state of keys in scope through its throttle, keeping
// those with a lockout or failures.
func (s *Server) peekAuth(r *http.Request, scope string, keys []string) ([]wire.AuthLockout, error) {
	t := s.authThrottleOf(scope)
	if t == nil || len(keys) == 0 {
		return nil, nil
	}
	states, err := t.Peek(r.Context(), keys)
	if err != nil {
		return nil, errAuthUnknown(err)
	}
	var out []wire.AuthLockout
	for _, st := range states {
		if !st.Locked && st.Failures <= 0 {
			continue
		}
		out = append(out, wire.AuthLockout{Address: st.Key, Scope: scope, Locked: st.Locked,
			RemainingSeconds: ceilSeconds(st.RetryAfter), Failures: st.Failures})
	}
	return out, nil
}

func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// AuthAddressKeys names the failed-credential counters of the client
// address key in scope, for store.Queries.LiftAuthLockout.
func AuthAddressKeys(scope, address string) store.AuthAddressKeys {
	k := store.AuthAddressKeys{Lockout: counterkey.AuthLockout(scope, address).String(), Notice: counterkey.AuthLockoutID(scope, address)}
	k.FailuresPrefix, k.FailuresSuffix = counterkey.AuthFailuresPattern(scope, address)
	return k
}

func (s *Server) handleListAuthLockouts() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authCountersElsewhere() != "" {
			// Rows left in rl_counters from before the counters moved
			// would be listed with the other store's state: list none.
			w.Header().Set("Cache-Control", "no-store")
			encode(w, http.StatusOK, wire.AuthLockoutList{Lockouts: []wire.AuthLockout{}, Unlisted: s.unlistedScopes()})
			return
		}
		rows, err := s.store.AuthCounters(r.Context(), s.now(), maxCounterList+1,
			counterkey.KindAuthFailures.Prefix(), counterkey.KindAuthLockout.Prefix())
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		out := wire.AuthLockoutList{Lockouts: []wire.AuthLockout{}}
		if len(rows) > maxCounterList {
			rows, out.Truncated = rows[:maxCounterList], true
		}
		keys := map[string][]string{}
		for _, row := range rows {
			k, err := counterkey.Parse(row.Key)
			if err != nil {
				continue
			}
			if scope, addr, ok := k.AuthAddress(); ok && !slices.Contains(keys[scope], addr) {
				keys[scope] = append(keys[scope], addr)
			}
		}
		for _, scope := range []string{authScopeRlapi, authScopeGateway} {
			l, err := s.peekAuth(r, scope, keys[scope])
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
			out.Lockouts = append(out.Lockouts, l...)
		}
		out.Unlisted = append(out.Unlisted, s.unlistedScopes()...)
		slices.SortFunc(out.Lockouts, func(a, b wire.AuthLockout) int {
			return cmp.Or(strings.Compare(a.Scope, b.Scope), strings.Compare(a.Address, b.Address))
		})
		w.Header().Set("Cache-Control", "no-store")
		encode(w, http.StatusOK, out)
	})
}

// LockoutAddress is the address of a lift: an IPv4 or IPv6 address, or an
// IPv6 network.
type LockoutAddress struct {
	Addr netip.Addr
	// Network is set when an IPv6 network was given: it is the key in
	// every scope, as given (host bits masked).
	Network netip.Prefix
}

// ParseLockoutAddress reads the address of a lift (DELETE
// /api/auth-lockouts/{address}, rlapi auth-lockout lift); its error is a
// 400 naming the field address.
func ParseLockoutAddress(raw string) (LockoutAddress, error) {
	fail := func(why string) error {
		return badRequest("address: "+why, validate.FieldError{Field: "address", Message: "address: " + why})
	}
	const want = "want an IPv4 address, an IPv6 address or an IPv6 network such as 2001:db8:1:2::/64"
	if raw == "" {
		return LockoutAddress{}, fail("required (" + want[5:] + ")")
	}
	if strings.Contains(raw, "/") {
		p, err := netip.ParsePrefix(raw)
		if err != nil || p.Addr().Is4() || p.Addr().Is4In6() {
			return LockoutAddress{}, fail(fmt.Sprintf("%s (got %q)", want, raw))
		}
		return LockoutAddress{Addr: p.Masked().Addr(), Network: p.Masked()}, nil
	}
	a, err := netip.ParseAddr(raw)
	if err != nil || a.Zone() != "" {
		return LockoutAddress{}, fail(fmt.Sprintf("%s (got %q)", want, raw))
	}
	return LockoutAddress{Addr: a.Unmap()}, nil
}

// Key is the address's key for a throttle that keys addresses by keyOf
// (auththrottle.Throttle.Key): the network as given, else the address's.
func (l LockoutAddress) Key(keyOf func(netip.Addr) string) string {
	if l.Network.IsValid() {
		return l.Network.String()
	}
	return keyOf(l.Addr)
}

// handleLiftAuthLockout lifts an address's lockout (and forgets its
// failures) in every scope, or in ?scope= only: one transaction deletes
// the counters, writes the audit row (action lift, resource auth-lockout,
// the before-image of what was lifted) and sends the notice every replica
// acts on. Nothing to lift is a 404, and writes nothing.
func (s *Server) handleLiftAuthLockout() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr, err := ParseLockoutAddress(r.PathValue("address"))
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if where := s.authCountersElsewhere(); where != "" {
			s.writeProblem(w, r, authLockoutsElsewhere(where))
			return
		}
		scopes := []string{authScopeRlapi, authScopeGateway}
		if sc := r.URL.Query().Get("scope"); sc != "" {
			scopes = []string{sc}
		}
		var before []wire.AuthLockout
		// shown is the address as the first scope keys it (an IPv6
		// address: its network), the audit row's id.
		shown := ""
		for _, scope := range scopes {
			t := s.authThrottleOf(scope)
			if t == nil {
				continue
			}
			key := addr.Key(t.Key)
			if shown == "" {
				shown = key
			}
			l, err := s.peekAuth(r, scope, []string{key})
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
			before = append(before, l...)
		}
		if shown == "" {
			shown = addr.Key(func(a netip.Addr) string { return a.String() })
		}
		if len(before) == 0 {
			s.writeProblem(w, r, errorf(http.StatusNotFound, "not-found", "Not found",
				fmt.Sprintf("no failed authentications are counted for %s (%s): nothing to lift", shown, strings.Join(scopes, ", "))))
			return
		}
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			for _, l := range before {
				if _, err := q.LiftAuthLockout(r.Context(), AuthAddressKeys(l.Scope, l.Address)); err != nil {
					return change{}, err
				}
			}
			return change{action: "lift", resourceType: "auth-lockout", id: shown, before: wire.AuthLockoutList{Lockouts: before}}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			// This replica forgets at once; the others (and this one
			// again) on the notice.
			for _, l := range before {
				if t := s.authThrottleOf(l.Scope); t != nil {
					t.Forget(l.Address)
				}
			}
			encode(w, http.StatusOK, wire.AuthLockoutLifted{Address: shown, Lifted: before})
		})
	})
}
