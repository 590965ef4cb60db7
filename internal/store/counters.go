package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Algorithms a Gate counts with (rl_take's p_algorithms; "" is
// AlgorithmFixedWindow).
const (
	AlgorithmFixedWindow   = "fixed_window"
	AlgorithmSlidingWindow = "sliding_window"
	AlgorithmTokenBucket   = "token_bucket"
)

// Gate is one counter a decision checks: a key, its window, its limit.
type Gate struct {
	Key string
	// Algorithm is AlgorithmFixedWindow ("" too), AlgorithmSlidingWindow
	// or AlgorithmTokenBucket.
	Algorithm string
	// WindowIndex is floor(now / window) for the windows, 0 for a token
	// bucket (one row per key).
	WindowIndex int64
	// Window is the window's length: the sliding window weighs the
	// previous window by it, and a token bucket refills Limit per Window.
	// Fixed windows need only WindowIndex.
	Window time.Duration
	Limit  int64
	// Burst is a token bucket's capacity (0: Limit).
	Burst int64
	// Enforce is false for shadow gates: they count but never deny.
	Enforce bool
	// ExpiresAt is when a window's row may be removed; a token bucket's
	// row expires at its TAT.
	ExpiresAt time.Time
	// Caller, Target and Definition are the key's parts the counter
	// selectors match on (empty: the key has none), stored beside the key
	// when the take creates its row (rl_take_024).
	Caller, Target, Definition string
}

// TakeRequest is one call to decide: its gates, sorted by (Key,
// WindowIndex), its cost, whether to consume (false: a peek), and its time
// (the sliding window and the token bucket count from it).
type TakeRequest struct {
	Gates   []Gate
	Cost    int64
	Consume bool
	Now     time.Time
}

// TakeResult is what rl_take decided for one call.
type TakeResult struct {
	Allowed bool
	// Counts per gate, after the decision: the window's count, or a token
	// bucket's TAT in nanoseconds since the epoch (0: full).
	Counts []int64
	Room   []bool // per gate: whether it had room for the call
	// Previous per gate: a sliding window's previous window count (0 for
	// the other algorithms); nil when no gate of the call is a sliding
	// window.
	Previous []int64
}

// ErrNotApplied marks a TakeBatch failure after which no counter was
// changed: PostgreSQL refused or aborted the statement (its transaction
// rolled back), or the statement was never sent. The batch's calls may be
// retried. A TakeBatch error without it leaves the outcome unknown: the
// connection failed after the statement was sent, and the server may have
// committed it.
var ErrNotApplied = errors.New("no counter was changed")

// ErrTimedOut marks, beside ErrNotApplied, a TakeBatch that ran out of time
// before anything was changed: PostgreSQL aborted it at the deadline
// (statement_timeout), or no connection was free in time. It is no call's
// fault.
var ErrTimedOut = errors.New("out of time")

// TakeBatch decides calls in one round trip (the rl_take_024 function,
// every algorithm): each all or nothing, denials read-only, the batch's rows
// locked once in key order. Calls are decided in the order given; calls
// sharing a counter see each other's effect.
//
// deadline (when not zero) bounds the statement on the server: it runs with
// statement_timeout set to what is left of it once a connection is in hand,
// in the same implicit transaction, so PostgreSQL itself aborts a statement
// that would finish late (waiting on a lock, say) and rolls back what it did.
// ctx should outlive deadline by a grace, so that the server's own answer,
// a result or that abort, is what the caller hears: a caller told "failed"
// then consumed nothing, and a caller told its counts holds them. Only a
// connection that answers nothing before ctx ends leaves the outcome unknown.
//
// Keys are stored through CounterKeyText, so any bytes may be passed.
func (s *Store) TakeBatch(ctx context.Context, reqs []TakeRequest, deadline time.Time) ([]TakeResult, error) {
	var (
		calls   []int32
		keys    []string
		windows []int64
		limits  []int64
		enforce []bool
		expires []time.Time
		algs    []string
		wns     []int64
		bursts  []int64
		callers []string
		targets []string
		defs    []string
		costs   = make([]int64, len(reqs))
		consume = make([]bool, len(reqs))
		nows    = make([]int64, len(reqs))
	)
	for i, r := range reqs {
		costs[i], consume[i] = r.Cost, r.Consume
		if !r.Now.IsZero() {
			nows[i] = r.Now.UnixNano()
		}
		for _, g := range r.Gates {
			alg := g.Algorithm
			if alg == "" {
				alg = AlgorithmFixedWindow
			}
			calls = append(calls, int32(i+1))
			keys, windows, limits = append(keys, CounterKeyText(g.Key)), append(windows, g.WindowIndex), append(limits, g.Limit)
			enforce, expires = append(enforce, g.Enforce), append(expires, g.ExpiresAt)
			algs, wns, bursts = append(algs, alg), append(wns, int64(g.Window)), append(bursts, g.Burst)
			callers, targets = append(callers, CounterKeyText(g.Caller)), append(targets, CounterKeyText(g.Target))
			defs = append(defs, CounterKeyText(g.Definition))
		}
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if !deadline.IsZero() {
		actx, cancel = context.WithDeadline(ctx, deadline)
	}
	conn, err := s.pool.Acquire(actx)
	cancel()
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("take counters: %w: %w: %w", ErrNotApplied, ErrTimedOut, err)
		}
		return nil, fmt.Errorf("take counters: %w: %w", ErrNotApplied, interpretError(err))
	}
	defer conn.Release()
	b := &pgx.Batch{}
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left < time.Millisecond {
			return nil, fmt.Errorf("take counters: %w: %w: %w", ErrNotApplied, ErrTimedOut, context.DeadlineExceeded)
		}
		ms := (left + time.Millisecond - 1) / time.Millisecond
		b.Queue(`select set_config('statement_timeout', $1, true)`, strconv.FormatInt(int64(ms), 10))
	}
	var (
		allowed  []bool
		counts   []int64
		room     []bool
		previous []int64
	)
	// rl_take_024 (migration 024): rl_take_012's counting, writing the
	// keys' parts when it inserts a counter; rl_take_012 stays for the
	// binaries before it.
	b.Queue(`select allowed, counts, room, previous from rl_take_024($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
		calls, keys, windows, limits, enforce, expires, costs, consume, algs, wns, bursts, nows, callers, targets, defs).QueryRow(func(row pgx.Row) error {
		return row.Scan(&allowed, &counts, &room, &previous)
	})
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "57014" { // query_canceled: our statement_timeout
			return nil, fmt.Errorf("take counters: %w: %w: %w", ErrNotApplied, ErrTimedOut, interpretError(err))
		}
		if errors.As(err, &pgErr) || pgconn.SafeToRetry(err) {
			return nil, fmt.Errorf("take counters: %w: %w", ErrNotApplied, interpretError(err))
		}
		return nil, fmt.Errorf("take counters: no answer, the statement may have committed: %w", interpretError(err))
	}
	if len(allowed) < len(reqs) || len(counts) < len(keys) || len(room) < len(keys) || len(previous) < len(keys) {
		return nil, fmt.Errorf("take counters: short answer (%d calls, %d counts for %d gates)", len(allowed), len(counts), len(keys))
	}
	out := make([]TakeResult, len(reqs))
	at := 0
	for i, r := range reqs {
		n := len(r.Gates)
		out[i] = TakeResult{Allowed: allowed[i], Counts: counts[at : at+n], Room: room[at : at+n]}
		for _, g := range r.Gates {
			if g.Algorithm == AlgorithmSlidingWindow {
				out[i].Previous = previous[at : at+n]
				break
			}
		}
		at += n
	}
	return out, nil
}

// keyEscape is the byte CounterKeyText escapes with: a control character,
// which neither identities (HTTP headers cannot carry it) nor names
// (internal/validate refuses it) contain, so every key a gateway builds from
// them is stored as it is.
const keyEscape = '\x01'

// CounterKeyText turns any string into one PostgreSQL text can hold, one to
// one: a NUL, a byte that is not part of valid UTF-8, and the escape byte
// itself become the escape byte and two hex digits. Valid UTF-8 without NUL
// or the escape byte comes back unchanged, so keys of real identities and
// names are stored as built. One bad byte in one call's key must not be able
// to fail the statement that decides a whole batch of calls (SQLSTATE 22021).
func CounterKeyText(s string) string {
	clean := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0 || r == keyEscape || (r == utf8.RuneError && size <= 1) {
			clean = false
			break
		}
		i += size
	}
	if clean {
		return s
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == 0 || r == keyEscape || (r == utf8.RuneError && size <= 1) {
			c := s[i]
			b.WriteByte(keyEscape)
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			i++
			continue
		}
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
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

// Sweep bounds: one SweepCounters call deletes at most sweepMaxBatches
// batches and works at most sweepBudget, pausing sweepPause between batches
// so decisions waiting on the same rows are not starved.
const (
	sweepMaxBatches = 400
	sweepBudget     = 5 * time.Second
	sweepPause      = 5 * time.Millisecond
)

// SweepCounters deletes expired counters, one replica at a time (a
// transaction-scoped advisory lock per batch; others skip), in batches of
// batch rows, each its own short transaction, for as long as batches come
// back full: a load that creates many rows a second gets as many batches as
// it needs (up to sweepMaxBatches, about sweepBudget of work, and never past
// ctx's deadline), a quiet table one short batch. It reports how many it
// removed and whether it held the lock.
func (s *Store) SweepCounters(ctx context.Context, now time.Time, batch int) (removed int64, ran bool, err error) {
	batch = max(batch, 1)
	stop := time.Now().Add(sweepBudget)
	if d, ok := ctx.Deadline(); ok {
		// Leave the last batch time to finish within ctx.
		stop = minTime(stop, d.Add(-time.Until(d)/4))
	}
	for i := range sweepMaxBatches {
		if i > 0 {
			if !time.Now().Before(stop) {
				break
			}
			t := time.NewTimer(sweepPause)
			select {
			case <-ctx.Done():
				t.Stop()
				return removed, ran, nil
			case <-t.C:
			}
		}
		n, locked, err := s.sweepBatch(ctx, now, batch)
		if err != nil {
			return removed, ran, fmt.Errorf("sweep counters: %w", err)
		}
		if !locked {
			break
		}
		ran = true
		removed += n
		if n < int64(batch) {
			break
		}
	}
	return removed, ran, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// sweepBatch deletes up to batch expired counters in one transaction.
func (s *Store) sweepBatch(ctx context.Context, now time.Time, batch int) (removed int64, ran bool, err error) {
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
	return removed, ran, err
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
// exact, on the parts of each key stored beside it (counterkey.PartsOf, the
// columns of migration 024), each served by an index: "user:al" never
// selects the counters of "user:alice".
type CounterSelector struct {
	// Caller is "user:<username>", "agent:<client id>" or "ip:<address>"
	// (the caller types of the counter keys; an anonymous caller's address
	// as the gateway's resolver keys it, ip:203.0.113.7 or
	// ip:2001:db8:1:2::/64): its caller and caller_target buckets, and its
	// shadow counters.
	Caller string
	// Target is "<entity_type>:<name>" ("mcp_server:mcpgw",
	// "a2a_agent:/booking", "mcp_tool:mcpgw:search"): its target counters,
	// for an mcp_server its server-group counters, and every caller's
	// caller_target buckets and shadow counters on it.
	Target string
	// Definition is a definition id: a target definition's counter (one
	// per member for a server group); a caller or caller_target
	// definition's shadow counters, and, while it is enabled in enforce
	// mode, the buckets it is checked against: those of its axis and
	// window of every caller it applies to (user members of its group if
	// it has a user limit, client members, counted as agent:<client id>,
	// if it has an agent limit). Those buckets are shared by the enforce
	// definitions of one axis and window (one bucket per caller, the most
	// restrictive limit decides), so the same bucket is listed, and reset,
	// under each such definition of the caller's (buckets of the
	// definition's own algorithm only: each algorithm has its own).
	//
	// Network members are not enumerated: a network member limits the
	// anonymous callers inside it (by its user limit), each counted as
	// ip:<address>, and which addresses have called is known only from
	// the keys themselves. Finding them would mean reading every ip
	// caller's bucket of the window and testing its address against the
	// definition's networks (an inet test no index serves), a
	// scan that grows with the anonymous traffic, so a definition
	// selector lists no ip caller's bucket; select those by caller
	// (ip:<address>). Its shadow counters are listed whatever the caller.
	//
	// The buckets are Shared's: resolved in Go from the definition and
	// its group's members (DefinitionBuckets), not in the statement, so
	// the caller of CountersOf may resolve them from elsewhere (rlapi's
	// counters API does, for every counter store). Nil Shared is resolved
	// by CountersOf and ResetCounters themselves.
	Definition string
	// Shared, with Definition, are the shared buckets the definition is
	// checked against (nil: resolve them; empty: none).
	Shared *SharedBuckets
}

// SharedBuckets are the caller or caller_target buckets of one window and
// algorithm that a caller definition is checked against, one per caller.
type SharedBuckets struct {
	// Kind is "c" (caller) or "ct" (caller_target).
	Kind          string
	WindowSeconds int
	// Algorithm is the definition's (fixed_window when unset).
	Algorithm string
	// Callers are user:<name> and agent:<client id>.
	Callers []string
}

// DefinitionBuckets resolves the shared buckets of a definition (see
// CounterSelector.Definition): for a caller or caller_target definition
// that is enabled in enforce mode, its axis and window, its algorithm, and
// the callers it applies to, read from its group's members (user members
// when it has a user limit, client members as agent:<client id> when it
// has an agent limit). Any other definition, or none by that id, shares
// no bucket: an empty SharedBuckets.
func (q *Queries) DefinitionBuckets(ctx context.Context, id string) (SharedBuckets, error) {
	axis, _, _, _, err := ratelimit.ParseDefinitionID(id)
	if err != nil || (axis != ratelimit.AxisCaller && axis != ratelimit.AxisCallerTarget) {
		return SharedBuckets{}, nil
	}
	d, err := q.GetDefinition(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return SharedBuckets{}, nil
	}
	if err != nil {
		return SharedBuckets{}, fmt.Errorf("resolve the buckets of %s: %w", id, err)
	}
	if !d.Enabled || d.Mode != ratelimit.ModeEnforce {
		return SharedBuckets{}, nil
	}
	b := SharedBuckets{Kind: "c", WindowSeconds: d.WindowSeconds, Algorithm: d.AlgorithmOrDefault()}
	if axis == ratelimit.AxisCallerTarget {
		b.Kind = "ct"
	}
	err = q.EachMembership(ctx, MembershipFilter{Group: d.Name}, func(m ratelimit.Membership) error {
		switch {
		case m.SubjectType == ratelimit.SubjectUser && d.UserMaxRequests != nil:
			b.Callers = append(b.Callers, "user:"+m.Subject)
		case m.SubjectType == ratelimit.SubjectClient && d.AgentMaxRequests != nil:
			b.Callers = append(b.Callers, "agent:"+m.Subject)
		}
		return nil
	})
	if err != nil {
		return SharedBuckets{}, fmt.Errorf("resolve the buckets of %s: %w", id, err)
	}
	return b, nil
}

// resolved is sel with its shared buckets resolved.
func (q *Queries) resolved(ctx context.Context, sel CounterSelector) (CounterSelector, error) {
	if sel.Definition == "" || sel.Shared != nil {
		return sel, nil
	}
	b, err := q.DefinitionBuckets(ctx, sel.Definition)
	if err != nil {
		return sel, err
	}
	sel.Shared = &b
	return sel, nil
}

// The parts of c.key (rl_counters c) the selectors match on: columns its
// writer fills (migration 024), each with an index of its own.
const (
	keyCaller     = `c.caller`
	keyTarget     = `c.target`
	keyDefinition = `c.definition`
)

// algorithmMarks are what a key's kind is marked with for an algorithm
// other than the fixed window (counterkey.Key's grammar).
var algorithmMarks = map[string]string{AlgorithmSlidingWindow: ".sw", AlgorithmTokenBucket: ".tb"}

// bucketPrefix is what the keys of the shared buckets of b start with:
// <kind><mark>|<window>| (c|60|, ct.tb|3600|). The caller follows it.
func bucketPrefix(b SharedBuckets) string {
	return b.Kind + algorithmMarks[b.Algorithm] + "|" + strconv.Itoa(b.WindowSeconds) + "|"
}

// where turns the selector into a predicate over c (rl_counters), adding
// its parameters to args. Each form is an index lookup
// (rl_counters_caller_idx, _target_idx, _definition_idx; migration 024).
func (s CounterSelector) where(args *[]any) (string, error) {
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
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
		if !ok || ident == "" || (typ != "user" && typ != "agent" && typ != "ip" && typ != "team") {
			return "", fmt.Errorf("%w: caller %q: want user:<name>, agent:<client id> or ip:<address> (or team:<name>, a team's buckets)", ErrInvalid, s.Caller)
		}
		return keyCaller + ` = ` + arg(CounterKeyText(s.Caller)), nil
	case s.Target != "":
		typ, name, ok := strings.Cut(s.Target, ":")
		if !ok || typ == "" || name == "" {
			return "", fmt.Errorf("%w: target %q: want <entity_type>:<name>", ErrInvalid, s.Target)
		}
		return keyTarget + ` = ` + arg(CounterKeyText(s.Target)), nil
	default:
		axis, _, _, _, err := ratelimit.ParseDefinitionID(s.Definition)
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		switch axis {
		case ratelimit.AxisTarget:
			return keyDefinition + ` = ` + arg(CounterKeyText(s.Definition)), nil
		case ratelimit.AxisCaller, ratelimit.AxisCallerTarget:
			id := arg(CounterKeyText(s.Definition))
			b := s.Shared
			if b == nil || len(b.Callers) == 0 {
				return keyDefinition + ` = ` + id, nil
			}
			callers := make([]string, len(b.Callers))
			for i, c := range b.Callers {
				callers[i] = CounterKeyText(c)
			}
			// Two index scans: the definition's own keys, and the
			// shared buckets of the callers resolved beforehand
			// (DefinitionBuckets), of the definition's kind, window
			// and algorithm (their keys' prefix).
			return `(` + keyDefinition + ` = ` + id + `
				or (` + keyCaller + ` = any (` + arg(callers) + `::text[])
					and starts_with(c.key, ` + arg(bucketPrefix(*b)) + `)))`, nil
		}
		return "false", nil // the quarantine sentinels count nothing
	}
}

// countersOfSQL is CountersOf's statement.
func countersOfSQL(sel CounterSelector, now time.Time, limit int) (string, []any, error) {
	args := []any{now}
	pred, err := sel.where(&args)
	if err != nil {
		return "", nil, err
	}
	var lim any // SQL null: no limit
	if limit > 0 {
		lim = limit
	}
	args = append(args, lim)
	return `select c.key, c.window_index, c.count, c.expires_at from rl_counters c
		where c.expires_at > $1 and c.count > 0 and ` + pred + `
		order by c.key collate "C", c.window_index limit $` + strconv.Itoa(len(args)), args, nil
}

// resetCountersSQL is ResetCounters' statement.
func resetCountersSQL(sel CounterSelector, now time.Time) (string, []any, error) {
	args := []any{now}
	pred, err := sel.where(&args)
	if err != nil {
		return "", nil, err
	}
	return `with m as (
			select c.key, c.window_index, c.count from rl_counters c
			where c.expires_at > $1 and c.count > 0 and ` + pred + `
			order by c.key, c.window_index
			for update of c)
		update rl_counters c set count = 0 from m
		where c.key = m.key and c.window_index = m.window_index
		returning c.key, c.window_index, m.count, c.expires_at`, args, nil
}

// CountersOf lists the live counters (current windows, count above zero) of
// one subject, in key byte order whatever the database's collation, at most
// limit of them (0: all). A counter at
// zero is not listed: to rl_take it is the same as no counter.
func (q *Queries) CountersOf(ctx context.Context, sel CounterSelector, now time.Time, limit int) ([]CounterRow, error) {
	sel, err := q.resolved(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("list counters: %w", err)
	}
	sql, args, err := countersOfSQL(sel, now, limit)
	if err != nil {
		return nil, fmt.Errorf("list counters: %w", err)
	}
	rows, err := q.db.Query(ctx, sql, args...)
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
	sel, err := q.resolved(ctx, sel)
	if err != nil {
		return nil, fmt.Errorf("reset counters: %w", err)
	}
	sql, args, err := resetCountersSQL(sel, now)
	if err != nil {
		return nil, fmt.Errorf("reset counters: %w", err)
	}
	rows, err := q.db.Query(ctx, sql, args...)
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

// DeleteCounterKeys deletes every counter of keys (every window), keys
// as gateways built them (stored through CounterKeyText).
func (s *Store) DeleteCounterKeys(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	stored := make([]string, len(keys))
	for i, k := range keys {
		stored[i] = CounterKeyText(k)
	}
	if _, err := s.pool.Exec(ctx, `delete from rl_counters where key = any ($1)`, stored); err != nil {
		return interpretError(err)
	}
	return nil
}
