package api

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// maxCounterList bounds GET /api/rate-limit-counters when no limit is given.
const maxCounterList = 10000

// counterOf is one live counter as the API shows it (wire.Counter).
func counterOf(lc counteradmin.Counter, now time.Time) wire.Counter {
	c := wire.Counter{Key: lc.Key, WindowIndex: lc.WindowIndex, Count: lc.State.Count, ExpiresAt: lc.ExpiresAt.UTC()}
	// The stored key is the key gateways built (on PostgreSQL escaped
	// only where it held bytes no name has, store.CounterKeyText): its
	// parts read the same.
	k, err := counterkey.Parse(lc.Key)
	if err != nil {
		return c // not a key a gateway writes: shown as it is
	}
	switch k.Kind {
	case counterkey.KindAuthFailures, counterkey.KindAuthLockout, counterkey.KindViolation:
		return c // no definition's counter: shown as it is
	}
	c.WindowSeconds = k.WindowSeconds
	if k.Kind == counterkey.KindShadow || k.Kind == counterkey.KindTarget || k.Kind == counterkey.KindPer {
		c.DefinitionID = k.DefinitionID
	}
	algorithm := ratelimit.AlgorithmFixedWindow
	if k.Algorithm != "" {
		algorithm = string(k.Algorithm)
	}
	if c.WindowSeconds > 0 {
		c.WindowStart = time.Unix(lc.WindowIndex*int64(c.WindowSeconds), 0).UTC()
	}
	describeCounter(&c, algorithm, lc.State, 0, 0, now)
	return c
}

// counterListOf is the answer of GET, and the before-image of a reset in
// the audit log and in dry runs.
func counterListOf(counters []counteradmin.Counter, now time.Time) wire.CounterList {
	l := wire.CounterList{Counters: make([]wire.Counter, len(counters))}
	for i, c := range counters {
		l.Counters[i] = counterOf(c, now)
	}
	return l
}

// errNoCounterAdmin answers the counters API of a server given no
// counter admin (api.Opts.CounterAdmin).
var errNoCounterAdmin = errorf(http.StatusServiceUnavailable, "unavailable", "Service unavailable",
	"this server lists and resets no counters: it was started without a counter store")

// counterSelectors are the query parameters that pick counters.
var counterSelectors = []string{"caller", "target", "definition"}

// counterSelector reads the one selector of the query, normalized, with
// a definition's shared buckets resolved (store.DefinitionBuckets: its
// group's members, read here in Go, so every counter store selects the
// same counters), and the id the audit log files a reset under
// ("caller=user:alice").
func (s *Server) counterSelector(r *http.Request) (counteradmin.Selector, string, error) {
	if s.counterAdmin == nil {
		return counteradmin.Selector{}, "", errNoCounterAdmin
	}
	sel, id, err := parseCounterSelector(r)
	if err != nil || sel.Definition == "" {
		return sel, id, err
	}
	b, err := s.store.DefinitionBuckets(r.Context(), sel.Definition)
	if err != nil {
		return counteradmin.Selector{}, "", err
	}
	sel.Shared = counteradmin.SharedBuckets{Kind: counterkey.Kind(b.Kind), WindowSeconds: b.WindowSeconds,
		Algorithm: enforce.Algorithm(b.Algorithm), Callers: b.Callers}
	return sel, id, nil
}

// parseCounterSelector reads the one selector of the query, normalized,
// and the id the audit log files a reset under.
func parseCounterSelector(r *http.Request) (counteradmin.Selector, string, error) {
	q := r.URL.Query()
	var name, value string
	for _, n := range counterSelectors {
		if _, ok := q[n]; !ok {
			continue
		}
		if name != "" {
			return counteradmin.Selector{}, "", badRequest(fmt.Sprintf("give exactly one of caller, target or definition (got %s and %s)", name, n))
		}
		name, value = n, strings.TrimSpace(q.Get(n))
	}
	fail := func(format string, args ...any) (counteradmin.Selector, string, error) {
		msg := name + ": " + fmt.Sprintf(format, args...)
		return counteradmin.Selector{}, "", badRequest(msg, validate.FieldError{Field: name, Message: msg})
	}
	var sel counteradmin.Selector
	switch name {
	case "":
		return counteradmin.Selector{}, "", badRequest("give exactly one of caller (user:<name>, agent:<client id> or ip:<address>), target (<entity_type>:<name>) or definition (<id>)")
	case "caller":
		typ, ident, ok := strings.Cut(value, ":")
		subjectType := typ
		switch typ {
		case "user":
		case "agent", ratelimit.SubjectClient:
			// Counters say agent for a caller with a client id;
			// memberships say client. Either selects it.
			typ, subjectType = "agent", ratelimit.SubjectClient
		case ratelimit.SubjectTeam:
			// A team's buckets (definitions per team).
			if !ok {
				break
			}
			ident, err := validate.Subject(ratelimit.SubjectTeam, ident)
			if err != nil {
				return fail("%v", err)
			}
			sel.Caller = enforce.CallerTeam + ":" + ident
			return sel, "caller=" + sel.Caller, nil
		case enforce.CallerIP:
			if !ok {
				break
			}
			key, err := ipCallerKey(ident)
			if err != nil {
				return fail("%v", err)
			}
			sel.Caller = enforce.CallerIP + ":" + key
			return sel, "caller=" + sel.Caller, nil
		default:
			ok = false
		}
		if !ok {
			return fail("must be user:<name> or agent:<client id>, or ip:<address> for an anonymous caller (got %q); team:<name> selects a team's buckets", value)
		}
		ident, err := validate.Subject(subjectType, ident)
		if err != nil {
			return fail("%v", err)
		}
		sel.Caller = typ + ":" + ident
	case "target":
		typ, raw, ok := strings.Cut(value, ":")
		switch typ {
		case ratelimit.EntityMCPServer, ratelimit.EntityA2AAgent, ratelimit.EntityMCPTool, ratelimit.EntityA2ASkill:
		case ratelimit.EntityRoute:
			// A route tier (route:<tier>): its per-caller buckets.
			n, ne := ratelimit.GroupName("target", raw)
			if ne != nil {
				return fail("%s", strings.TrimPrefix(ne.Message, "target: "))
			}
			sel.Target = typ + ":" + n
			return sel, name + "=" + sel.Target, nil
		default:
			ok = false
		}
		if !ok {
			return fail("must be <entity_type>:<name> with entity type mcp_server, a2a_agent, mcp_tool, a2a_skill or route (got %q)", value)
		}
		n, err := validate.TargetName(typ, raw)
		if err != nil {
			return fail("%v", err)
		}
		sel.Target = typ + ":" + n
	case "definition":
		id, err := validate.DefinitionID(value)
		if err != nil {
			return fail("%v", err)
		}
		sel.Definition = id
	}
	return sel, name + "=" + sel.Caller + sel.Target + sel.Definition, nil
}

func (s *Server) handleListCounters() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sel, _, err := s.counterSelector(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		limit, err := listLimit(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if limit == 0 {
			limit = maxCounterList
		}
		now := s.now()
		page, err := s.counterAdmin.Counters(r.Context(), sel, now, limit)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		out := counterListOf(page.Counters, now)
		s.describeBuckets(r.Context(), page.Counters, &out, now)
		out.Truncated = page.Truncated
		encode(w, http.StatusOK, out)
	})
}

// handleResetCounters sets a subject's live counters back to zero: its
// current windows start afresh, in whichever store the decisions count.
// The audit row's before-image lists the counters as they were; a reset
// that finds nothing to reset is "unchanged" and writes no row. The reset
// is the counter store's own step, ahead of the audit row's transaction
// (the counters need not live in the database); a dry run lists what a
// reset would reset, and resets nothing.
func (s *Server) handleResetCounters() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sel, id, err := s.counterSelector(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		dry, err := dryRun(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		now := s.now()
		// The store's step first, on a connection of its own, then the
		// audit row's transaction: holding one while waiting for the
		// other would take two of the pool's connections per reset.
		var page counteradmin.Page
		if dry {
			page, err = s.counterAdmin.Counters(r.Context(), sel, now, 0)
		} else {
			page, err = s.counterAdmin.ResetCounters(r.Context(), sel, now)
		}
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		before := counterListOf(page.Counters, now)
		before.Truncated = page.Truncated // a dry run says so too
		reset := change{action: "reset", resourceType: "counters", id: id, before: before}
		if len(page.Counters) == 0 {
			reset.action, reset.before = "unchanged", nil
		}
		ch, dry, err := s.mutate(r, func(*store.Queries) (change, error) { return reset, nil })
		s.answer(w, r, ch, dry, err, func() {
			encode(w, http.StatusOK, wire.CountersReset{Reset: true, Removed: int64(len(page.Counters)), Truncated: page.Truncated})
		})
	})
}

// ipCallerKey reads the address of an ip:<address> caller selector as the
// gateways' resolver keys anonymous callers (clientip.Key): an IPv4
// address (an IPv4-mapped IPv6 one unmapped), or an IPv6 network in CIDR
// form, host bits masked (ip:2001:db8:1:2::5/64 selects the /64 that holds
// it). An IPv6 address without a prefix names no bucket: the gateways key
// IPv6 by a prefix (/64 unless rlapi's --ipv6-prefix says otherwise).
func ipCallerKey(s string) (string, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return "", fmt.Errorf("ip:%s: want an IPv4 address or an IPv6 network such as 2001:db8:1:2::/64", s)
		}
		if p.Addr().Is4() || p.Addr().Is4In6() {
			return "", fmt.Errorf("ip:%s: an IPv4 caller is its address, without a prefix (ip:%s)", s, p.Addr().Unmap())
		}
		return p.Masked().String(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return "", fmt.Errorf("ip:%s: want an IPv4 address or an IPv6 network such as 2001:db8:1:2::/64", s)
	}
	if a = a.Unmap(); a.Is6() {
		return "", fmt.Errorf("ip:%s: an IPv6 caller is its network, e.g. ip:%s/64 (the gateways' IPv6 prefix, /64 by default)", s, a)
	}
	return a.String(), nil
}
