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
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// maxCounterList bounds GET /api/rate-limit-counters when no limit is given.
const maxCounterList = 10000

// counter is one enforcement counter as the API shows it.
type counter struct {
	Key           string    `json:"key"`
	WindowIndex   int64     `json:"window_index"`
	WindowSeconds int       `json:"window_seconds,omitzero"`
	WindowStart   time.Time `json:"window_start,omitzero"`
	Count         int64     `json:"count"`
	ExpiresAt     time.Time `json:"expires_at"`
	// DefinitionID names the definition when the key does: target and
	// shadow counters. Caller and caller_target buckets are shared by the
	// definitions of one window, so they name none (a definition selector
	// still finds them, through its group's members).
	DefinitionID string `json:"definition_id,omitempty"`
	// Algorithm is sliding_window or token_bucket; absent for a fixed
	// window (counter_state.go).
	Algorithm string `json:"algorithm,omitempty"`
	// FullAt is when a token bucket is full again (its TAT); absent when
	// it is full.
	FullAt *time.Time `json:"full_at,omitempty"`
	// Tokens is the whole tokens a token bucket has left, of Burst, when
	// the counter names the definition it counts for.
	Tokens *int64 `json:"tokens,omitempty"`
	Burst  int64  `json:"burst,omitempty"`
}

func counterOf(row store.CounterRow, now time.Time) counter {
	c := counter{Key: row.Key, WindowIndex: row.WindowIndex, Count: row.Count, ExpiresAt: row.ExpiresAt.UTC()}
	// The stored key is the key gateways built, escaped only where it
	// held bytes no name has (store.CounterKeyText): its parts read the
	// same.
	k, err := enforce.ParseCounterKey(row.Key)
	if err != nil {
		return c // not a key a gateway writes: shown as it is
	}
	c.WindowSeconds = k.WindowSeconds
	if k.Kind == enforce.KindShadow || k.Kind == enforce.KindTarget || k.Kind == enforce.KindPer {
		c.DefinitionID = k.DefinitionID
	}
	algorithm := ratelimit.AlgorithmFixedWindow
	if k.Algorithm != "" {
		algorithm = string(k.Algorithm)
	}
	if c.WindowSeconds > 0 {
		c.WindowStart = time.Unix(row.WindowIndex*int64(c.WindowSeconds), 0).UTC()
	}
	describeCounter(&c, algorithm, rowState(row, algorithm), 0, 0, now)
	return c
}

// counterList is the answer of GET, and the before-image of a reset in the
// audit log and in dry runs.
type counterList struct {
	Counters []counter `json:"counters"`
	// Truncated says more counters matched than the limit.
	Truncated bool `json:"truncated,omitempty"`
}

func counterListOf(rows []store.CounterRow, now time.Time) counterList {
	l := counterList{Counters: make([]counter, len(rows))}
	for i, r := range rows {
		l.Counters[i] = counterOf(r, now)
	}
	return l
}

type countersReset struct {
	Reset   bool `json:"reset"`
	Removed int  `json:"removed"`
}

// counterSelectors are the query parameters that pick counters.
var counterSelectors = []string{"caller", "target", "definition"}

// counterSelector reads the one selector of the query, normalized, and the
// id the audit log files a reset under ("caller=user:alice").
func counterSelector(r *http.Request) (store.CounterSelector, string, error) {
	q := r.URL.Query()
	var name, value string
	for _, n := range counterSelectors {
		if _, ok := q[n]; !ok {
			continue
		}
		if name != "" {
			return store.CounterSelector{}, "", badRequest(fmt.Sprintf("give exactly one of caller, target or definition (got %s and %s)", name, n))
		}
		name, value = n, strings.TrimSpace(q.Get(n))
	}
	fail := func(format string, args ...any) (store.CounterSelector, string, error) {
		msg := name + ": " + fmt.Sprintf(format, args...)
		return store.CounterSelector{}, "", badRequest(msg, validate.FieldError{Field: name, Message: msg})
	}
	var sel store.CounterSelector
	switch name {
	case "":
		return store.CounterSelector{}, "", badRequest("give exactly one of caller (user:<name>, agent:<client id> or ip:<address>), target (<entity_type>:<name>) or definition (<id>)")
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
		if s.cfg.CountersIn != "" {
			s.writeProblem(w, r, countersElsewhere(s.cfg.CountersIn))
			return
		}
		sel, _, err := counterSelector(r)
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
		rows, err := s.store.CountersOf(r.Context(), sel, now, limit+1)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		truncated := len(rows) > limit
		if truncated {
			rows = rows[:limit]
		}
		out := counterListOf(rows, now)
		s.describeBuckets(r.Context(), rows, &out, now)
		out.Truncated = truncated
		encode(w, http.StatusOK, out)
	})
}

// handleResetCounters sets a subject's live counters back to zero: its
// current windows start afresh. The audit row's before-image lists the
// counters as they were; a reset that finds nothing to reset is
// "unchanged" and writes no row.
func (s *Server) handleResetCounters() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.CountersIn != "" {
			s.writeProblem(w, r, countersElsewhere(s.cfg.CountersIn))
			return
		}
		sel, id, err := counterSelector(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		now := s.now()
		var removed int
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			rows, err := q.ResetCounters(r.Context(), sel, now)
			if err != nil {
				return change{}, err
			}
			removed = len(rows)
			ch := change{action: "reset", resourceType: "counters", id: id, before: counterListOf(rows, now)}
			if removed == 0 {
				ch.action, ch.before = "unchanged", nil
			}
			return ch, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			encode(w, http.StatusOK, countersReset{Reset: true, Removed: removed})
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

// countersElsewhere is the 501 of the counters API when the decisions
// count in another store (rlapi --counters-url): rlapi cannot list or
// reset them there, and says so rather than answer an empty list.
func countersElsewhere(where string) *httpError {
	return errorf(http.StatusNotImplemented, "counters-elsewhere", "Counters are not in PostgreSQL",
		"this rlapi counts in "+where+" (--counters-url): the counters API lists and resets PostgreSQL's counters only; "+
			"counters in "+where+" expire on their own at the end of their window")
}
