package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Gate is one counter a decision checks: a key, its window, its limit.
type Gate struct {
	Key         string
	WindowIndex int64
	Limit       int64
	// Enforce is false for shadow gates: they count but never deny.
	Enforce   bool
	ExpiresAt time.Time
}

// TakeRequest is one call to decide: its gates, sorted by (Key,
// WindowIndex), its cost, and whether to consume (false: a peek).
type TakeRequest struct {
	Gates   []Gate
	Cost    int64
	Consume bool
}

// TakeResult is what rl_take decided for one call.
type TakeResult struct {
	Allowed bool
	Counts  []int64 // per gate, after the decision
	Room    []bool  // per gate: whether it had room for the call
}

// TakeBatch decides calls in one round trip (the rl_take function): each
// all or nothing, denials read-only, the batch's rows locked once in key
// order. Calls are decided in the order given; calls sharing a counter see
// each other's effect.
func (q *Queries) TakeBatch(ctx context.Context, reqs []TakeRequest) ([]TakeResult, error) {
	var (
		calls   []int32
		keys    []string
		windows []int64
		limits  []int64
		enforce []bool
		expires []time.Time
		costs   = make([]int64, len(reqs))
		consume = make([]bool, len(reqs))
	)
	for i, r := range reqs {
		costs[i], consume[i] = r.Cost, r.Consume
		for _, g := range r.Gates {
			calls = append(calls, int32(i+1))
			keys, windows, limits = append(keys, g.Key), append(windows, g.WindowIndex), append(limits, g.Limit)
			enforce, expires = append(enforce, g.Enforce), append(expires, g.ExpiresAt)
		}
	}
	var (
		allowed []bool
		counts  []int64
		room    []bool
	)
	err := q.db.QueryRow(ctx, `select allowed, counts, room from rl_take($1, $2, $3, $4, $5, $6, $7, $8)`,
		calls, keys, windows, limits, enforce, expires, costs, consume).Scan(&allowed, &counts, &room)
	if err != nil {
		return nil, fmt.Errorf("take counters: %w", interpretError(err))
	}
	if len(allowed) < len(reqs) || len(counts) < len(keys) || len(room) < len(keys) {
		return nil, fmt.Errorf("take counters: short answer (%d calls, %d counts for %d gates)", len(allowed), len(counts), len(keys))
	}
	out := make([]TakeResult, len(reqs))
	at := 0
	for i, r := range reqs {
		n := len(r.Gates)
		out[i] = TakeResult{Allowed: allowed[i], Counts: counts[at : at+n], Room: room[at : at+n]}
		at += n
	}
	return out, nil
}

// Take decides one call (see TakeBatch).
func (q *Queries) Take(ctx context.Context, gates []Gate, cost int64, consume bool) (TakeResult, error) {
	res, err := q.TakeBatch(ctx, []TakeRequest{{Gates: gates, Cost: cost, Consume: consume}})
	if err != nil {
		return TakeResult{}, err
	}
	return res[0], nil
}

// CounterRow is one stored counter.
type CounterRow struct {
	Key         string    `json:"key"`
	WindowIndex int64     `json:"window_index"`
	Count       int64     `json:"count"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Counters lists the live counters whose key starts with prefix.
func (q *Queries) Counters(ctx context.Context, prefix string, now time.Time, limit int) ([]CounterRow, error) {
	rows, err := q.db.Query(ctx, `select key, window_index, count, expires_at from rl_counters
		where key like $1 escape '\' and expires_at > $2 order by key, window_index limit $3`,
		likePrefix(prefix), now, limit)
	if err != nil {
		return nil, fmt.Errorf("list counters: %w", interpretError(err))
	}
	defer rows.Close()
	var out []CounterRow
	for rows.Next() {
		var c CounterRow
		if err := rows.Scan(&c.Key, &c.WindowIndex, &c.Count, &c.ExpiresAt); err != nil {
			return nil, fmt.Errorf("list counters: %w", interpretError(err))
		}
		out = append(out, c)
	}
	return out, interpretError(rows.Err())
}

// SweepCounters deletes up to batch expired counters, one replica at a time
// (a transaction-scoped advisory lock; others skip). It reports how many it
// removed and whether it held the lock.
func (s *Store) SweepCounters(ctx context.Context, now time.Time, batch int) (removed int64, ran bool, err error) {
	err = s.InTx(ctx, func(q *Queries) error {
		if err := q.db.QueryRow(ctx, `select pg_try_advisory_xact_lock(hashtext('rlctl counter sweep'))`).Scan(&ran); err != nil {
			return interpretError(err)
		}
		if !ran {
			return nil
		}
		tag, err := q.db.Exec(ctx, `delete from rl_counters where ctid = any (array(
			select ctid from rl_counters where expires_at <= $1 limit $2))`, now, batch)
		if err != nil {
			return interpretError(err)
		}
		removed = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("sweep counters: %w", err)
	}
	return removed, ran, nil
}

func likePrefix(p string) string { return likeEscape(p) + "%" }

func likeEscape(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '%' || r == '_' || r == '\\' {
			out = append(out, '\\')
		}
		out = append(out, r)
	}
	return string(out)
}

// CounterSelector picks the counters of one subject. Exactly one field is
// set, in canonical form (internal/validate normalizes names). Matching is
// exact: the selector names whole key segments, so "user:al" never selects
// the counters of "user:alice".
type CounterSelector struct {
	// Caller is "user:<username>" or "agent:<client id>" (the caller types
	// of the counter keys): its caller and caller_target buckets, and its
	// shadow counters.
	Caller string
	// Target is "<entity_type>:<name>" ("mcp_server:mcpgw",
	// "a2a_agent:/booking", "mcp_tool:mcpgw:search"): its target counters,
	// for an mcp_server its server-group counters, and every caller's
	// caller_target buckets and shadow counters on it.
	Target string
	// Definition is a definition id: a target definition's counter (one
	// per member for a server group); for a caller or caller_target
	// definition its shadow counters and the enforce buckets of its window
	// of the callers in its group. Those buckets are shared by the
	// definitions of one window (one bucket per caller and window), so the
	// same bucket is listed under each such definition of the caller's.
	Definition string
}

// The parts of a counter key the selectors match on. Keys are
//
//	c|<window>|<caller>                       caller bucket
//	ct|<window>|<caller>|<target>             caller_target bucket
//	s|<definition id>|<caller>[|<target>]     shadow caller / caller_target
//	t|<definition id>                         target
//	t|<definition id>|<server>                server group member
//
// where <caller> is user:<name> or agent:<client id> and <target> is
// mcp_server:<name> or a2a_agent:<path>. kind is the first segment, slot the
// second (a window, or a group or server-group definition id: group names
// never contain '|'), rest what follows the second '|'. Identities may
// contain '|', which is why the selectors anchor on kind and slot and
// compare rest whole (or by a LIKE pattern anchored at both ends) instead of
// searching the key.
const counterParts = `cross join lateral (select split_part(c.key, '|', 1) as kind, split_part(c.key, '|', 2) as slot,
	substr(c.key, length(split_part(c.key, '|', 1)) + length(split_part(c.key, '|', 2)) + 3) as rest) p`

// counterTargetTypes are the target types a caller_target key can carry.
var counterTargetTypes = []string{"mcp_server", "a2a_agent"}

// where turns the selector into a predicate over c (rl_counters) and p
// (counterParts), adding its parameters to args.
func (s CounterSelector) where(args *[]any) (string, error) {
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	// callerThenTarget matches rest = <caller>|<target type>:...
	callerThenTarget := func(caller string) string {
		var or []string
		for _, t := range counterTargetTypes {
			or = append(or, `p.rest like `+arg(likeEscape(caller+"|"+t+":")+"%")+` escape '\'`)
		}
		return "(" + strings.Join(or, " or ") + ")"
	}
	const window = `p.slot ~ '^[1-9][0-9]*$'`
	set := 0
	for _, v := range []string{s.Caller, s.Target, s.Definition} {
		if v != "" {
			set++
		}
	}
	if set != 1 {
		return "", fmt.Errorf("%w: a counter selector names exactly one caller, target or definition", ErrInvalid)
	}
	switch {
	case s.Caller != "":
		typ, ident, ok := strings.Cut(s.Caller, ":")
		if !ok || ident == "" || (typ != "user" && typ != "agent") {
			return "", fmt.Errorf("%w: caller %q: want user:<name> or agent:<client id>", ErrInvalid, s.Caller)
		}
		c, ct := arg(s.Caller), callerThenTarget(s.Caller)
		return `((p.kind = 'c' and ` + window + ` and p.rest = ` + c + `)
			or (p.kind = 'ct' and ` + window + ` and ` + ct + `)
			or (p.kind = 's' and p.slot like 'caller:%' and p.rest = ` + c + `)
			or (p.kind = 's' and p.slot like 'caller\_target:%' escape '\' and ` + ct + `))`, nil
	case s.Target != "":
		typ, name, ok := strings.Cut(s.Target, ":")
		if !ok || typ == "" || name == "" {
			return "", fmt.Errorf("%w: target %q: want <entity_type>:<name>", ErrInvalid, s.Target)
		}
		// A target definition's key is t|target:<type>:<name>:<window>;
		// the window check keeps "mcpgw" from matching a server "mcpgw:x".
		defPrefix := "t|target:" + s.Target + ":"
		onTarget := arg("%|" + likeEscape(s.Target))
		pred := `((p.kind = 'ct' and ` + window + ` and p.rest like ` + onTarget + ` escape '\')
			or (p.kind = 's' and p.slot like 'caller\_target:%' escape '\' and p.rest like ` + onTarget + ` escape '\')
			or (c.key like ` + arg(likeEscape(defPrefix)+"%") + ` escape '\'
				and substr(c.key, ` + arg(utf8.RuneCountInString(defPrefix)+1) + `) ~ '^[1-9][0-9]*$')`
		if typ == "mcp_server" {
			pred += `
			or (p.kind = 't' and p.slot like 'target:server\_group:%' escape '\' and p.rest = ` + arg(name) + `)`
		}
		return pred + ")", nil
	default:
		axis, entity, name, window, err := ratelimit.ParseDefinitionID(s.Definition)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		switch {
		case axis == ratelimit.AxisTarget && entity == ratelimit.EntityServerGroup:
			return `(p.kind = 't' and p.slot = ` + arg(s.Definition) + ` and p.rest <> '')`, nil
		case axis == ratelimit.AxisTarget:
			return `c.key = ` + arg("t|"+s.Definition), nil
		case axis == ratelimit.AxisCaller || axis == ratelimit.AxisCallerTarget:
			// Its shadow counters, and the enforce buckets of its window
			// of every caller its group holds: those are the counts its
			// limit is checked against (shared with the caller's other
			// definitions of that window, the most restrictive of which
			// decides). A user member counts as user:<name>, a client
			// member as agent:<client id>.
			member := `exists (select 1 from rl_memberships m
				where m.groups @> array[` + arg(name) + `::text] and m.subject_type in ('user', 'client')
				and %s)`
			callerKey := `(case m.subject_type when 'user' then 'user:' else 'agent:' end || m.subject)`
			var enforced string
			if axis == ratelimit.AxisCaller {
				enforced = `(p.kind = 'c' and p.slot = ` + arg(strconv.Itoa(window)) + ` and ` +
					fmt.Sprintf(member, `p.rest = `+callerKey) + `)`
			} else {
				var or []string
				for _, t := range counterTargetTypes {
					or = append(or, `starts_with(p.rest, `+callerKey+` || '|`+t+`:')`)
				}
				enforced = `(p.kind = 'ct' and p.slot = ` + arg(strconv.Itoa(window)) + ` and ` +
					fmt.Sprintf(member, "("+strings.Join(or, " or ")+")") + `)`
			}
			return `((p.kind = 's' and p.slot = ` + arg(s.Definition) + `) or ` + enforced + `)`, nil
		}
		return "false", nil // the quarantine sentinels count nothing
	}
}

// CountersOf lists the live counters (current windows, count above zero) of
// one subject, in key byte order whatever the database's collation, at most
// limit of them (0: all). A counter at
// zero is not listed: to rl_take it is the same as no counter.
func (q *Queries) CountersOf(ctx context.Context, sel CounterSelector, now time.Time, limit int) ([]CounterRow, error) {
	args := []any{now}
	pred, err := sel.where(&args)
	if err != nil {
		return nil, fmt.Errorf("list counters: %w", err)
	}
	var lim any // SQL null: no limit
	if limit > 0 {
		lim = limit
	}
	args = append(args, lim)
	rows, err := q.db.Query(ctx, `select c.key, c.window_index, c.count, c.expires_at from rl_counters c `+counterParts+`
		where c.expires_at > $1 and c.count > 0 and `+pred+`
		order by c.key collate "C", c.window_index limit $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, fmt.Errorf("list counters: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, scanCounter)
	if err != nil {
		return nil, fmt.Errorf("list counters: %w", interpretError(err))
	}
	return out, nil
}

// ResetCounters sets the live counters of one subject back to zero and
// returns them as they were, in key byte order: the subject starts its current
// windows afresh.
//
// It zeroes rather than deletes. rl_take inserts a missing row and then
// locks it in a second statement; a row deleted in between is invisible to
// that lock, and the decision would come back one count short. A zeroed row
// stays put, and to rl_take zero is the same as no row; the sweeper removes
// it when it expires. The rows are locked in rl_take's order (key in the
// column's collation, then window: the same ORDER BY ... FOR UPDATE), so a
// reset and a decision never deadlock.
func (q *Queries) ResetCounters(ctx context.Context, sel CounterSelector, now time.Time) ([]CounterRow, error) {
	args := []any{now}
	pred, err := sel.where(&args)
	if err != nil {
		return nil, fmt.Errorf("reset counters: %w", err)
	}
	rows, err := q.db.Query(ctx, `with m as (
			select c.key, c.window_index, c.count from rl_counters c `+counterParts+`
			where c.expires_at > $1 and c.count > 0 and `+pred+`
			order by c.key, c.window_index
			for update of c)
		update rl_counters c set count = 0 from m
		where c.key = m.key and c.window_index = m.window_index
		returning c.key, c.window_index, m.count, c.expires_at`, args...)
	if err != nil {
		return nil, fmt.Errorf("reset counters: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, scanCounter)
	if err != nil {
		return nil, fmt.Errorf("reset counters: %w", interpretError(err))
	}
	slices.SortFunc(out, func(a, b CounterRow) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), cmp.Compare(a.WindowIndex, b.WindowIndex))
	})
	return out, nil
}

func scanCounter(row pgx.CollectableRow) (CounterRow, error) {
	var c CounterRow
	err := row.Scan(&c.Key, &c.WindowIndex, &c.Count, &c.ExpiresAt)
	return c, err
}

// CounterKeyInfo reads what a counter key names: the definition behind it
// (empty for the caller and caller_target buckets, which the definitions of
// one window share) and its window in seconds (0 for a key enforce does not
// write).
func CounterKeyInfo(key string) (definitionID string, windowSeconds int) {
	kind, rest, _ := strings.Cut(key, "|")
	switch kind {
	case "c", "ct":
		w, _, _ := strings.Cut(rest, "|")
		n, err := strconv.Atoi(w)
		if err != nil || n <= 0 {
			return "", 0
		}
		return "", n
	case "s":
		definitionID, _, _ = strings.Cut(rest, "|")
	case "t":
		// A target definition id may itself contain '|' (server names
		// may); only server-group keys append |<server>, and group names
		// never contain '|'.
		definitionID = rest
		if strings.HasPrefix(rest, "target:server_group:") {
			definitionID, _, _ = strings.Cut(rest, "|")
		}
	default:
		return "", 0
	}
	_, _, _, w, err := ratelimit.ParseDefinitionID(definitionID)
	if err != nil {
		return "", 0
	}
	return definitionID, w
}
