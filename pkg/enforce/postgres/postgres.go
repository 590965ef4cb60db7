// Package postgres is pkg/enforce's PostgreSQL backend: a CounterStore
// over the rl_counters table (the rl_take function: a batch of calls in one
// round trip, each all or nothing, fixed windows, sliding windows and token
// buckets alike) and a Source over the definitions,
// memberships, admins and master switch, with LISTEN/NOTIFY for change
// notices. Every replica on the same database enforces one limit.
//
//	e, err := postgres.Open(ctx, os.Getenv("DATABASE_URL"), enforce.Options{})
//	defer e.Close()
//	d, err := e.Check(ctx, enforce.Call{...})
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Open connects to the rlctl database at url (a pool of opts.MaxConns
// connections, default 12) and starts an Enforcer on it. The Enforcer's
// Close closes the pool. opts.Counters and opts.Source, when set, are kept
// (say, counters elsewhere, definitions from here). opts.Observers, when
// nil, gets a record of violations on rl_events (EventSink), which the
// Enforcer's Close flushes and stops; any other list (an empty one: no
// record) is kept as given.
func Open(ctx context.Context, url string, opts enforce.Options) (*enforce.Enforcer, error) {
	maxConns := opts.MaxConns
	if maxConns <= 0 {
		maxConns = 12
	}
	st, err := store.Open(ctx, url, store.Opts{MaxConns: maxConns, ApplicationName: "rlctl-enforce"})
	if err != nil {
		return nil, err
	}
	onClose := opts.OnClose
	opts.OnClose = func() {
		if onClose != nil {
			onClose()
		}
		st.Close()
	}
	e, err := newEnforcer(ctx, st, opts)
	if err != nil {
		st.Close()
		return nil, err
	}
	return e, nil
}

// New starts an Enforcer on a pool the caller owns (and closes after the
// Enforcer): rlapi embeds one on its decisions pool. Keep the pool one
// connection larger than opts.Workers: the source listens on one. Its
// defaults are Open's.
func New(ctx context.Context, pool *pgxpool.Pool, opts enforce.Options) (*enforce.Enforcer, error) {
	return newEnforcer(ctx, store.New(pool), opts)
}

func newEnforcer(ctx context.Context, st *store.Store, opts enforce.Options) (*enforce.Enforcer, error) {
	if opts.Counters == nil {
		opts.Counters = NewCounterStore(st.Pool())
	}
	if opts.Source == nil {
		opts.Source = NewSource(st.Pool())
	}
	if opts.Observers == nil {
		rec, err := violations.New(NewEventSink(st.Pool()), violations.Opts{Now: opts.Now, Logger: opts.Logger,
			Registerer: opts.Registerer})
		if err != nil {
			return nil, err
		}
		opts.Observers = []enforce.Observer{rec}
		onClose := opts.OnClose
		opts.OnClose = func() {
			rec.Close()
			if onClose != nil {
				onClose()
			}
		}
		e, err := enforce.New(ctx, opts)
		if err != nil {
			rec.Close()
			return nil, err
		}
		return e, nil
	}
	return enforce.New(ctx, opts)
}

// EventSink is a violations.Sink (the record of violations) on the
// rl_events table (migration
// 017): each flush is one upsert, so every replica's events for the same
// minute, kind, subject and definition add up in one row. rlapi deletes
// rows past its retention (--events-retention).
type EventSink struct {
	st *store.Store
}

// NewEventSink records in the database pool connects to.
func NewEventSink(pool *pgxpool.Pool) *EventSink {
	return &EventSink{st: store.New(pool)}
}

var _ violations.Sink = (*EventSink)(nil)

// WriteEvents upserts evs (distinct keys) in one statement.
func (s *EventSink) WriteEvents(ctx context.Context, evs []ratelimit.Event) error {
	return s.st.UpsertEvents(ctx, evs)
}

// Sweep bounds, per Sweep call: up to sweepRounds rounds of SweepCounters
// (each deleting batches of sweepBatch rows while they come back full),
// each within sweepRoundTimeout, so one sweep never hogs the database.
const (
	sweepRounds       = 10
	sweepBatch        = 5000
	sweepRoundTimeout = 10 * time.Second
)

// CounterStore is an enforce.CounterStore on the rl_counters table.
type CounterStore struct {
	st *store.Store
}

// NewCounterStore counts in the database pool connects to (migrated by
// rlapi migrate).
func NewCounterStore(pool *pgxpool.Pool) *CounterStore {
	return &CounterStore{st: store.New(pool)}
}

var _ enforce.CounterStore = (*CounterStore)(nil)

// BackendName is "postgres", the metrics' backend label.
func (c *CounterStore) BackendName() string { return "postgres" }

// Take decides reqs in one rl_take round trip, every algorithm in the same
// statement. Window indexes (fixed and sliding windows) are
// floor(unix(Now) / Window) and their rows expire one window after theirs
// ends; a token bucket has one row per key, expiring at its TAT. Errors
// wrap enforce.ErrNotApplied when nothing was changed, enforce.ErrTimedOut
// as well when that was for the deadline, and enforce.ErrOutcomeUnknown
// when the statement may have committed.
func (c *CounterStore) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	sreqs := make([]store.TakeRequest, len(reqs))
	for i, r := range reqs {
		gates := make([]store.Gate, len(r.Gates))
		for j, g := range r.Gates {
			sg, err := storeGate(g, r.Now)
			if err != nil {
				return nil, fmt.Errorf("take counters: %w: %w", err, enforce.ErrNotApplied)
			}
			gates[j] = sg
		}
		sreqs[i] = store.TakeRequest{Gates: gates, Cost: r.Cost, Consume: r.Consume, Now: r.Now}
	}
	res, err := c.st.TakeBatch(ctx, sreqs, deadline)
	if err != nil {
		return nil, mapTakeError(err)
	}
	out := make([]enforce.TakeResult, len(res))
	for i, r := range res {
		states := make([]enforce.GateState, len(r.Counts))
		for j, n := range r.Counts {
			var prev int64
			if r.Previous != nil {
				prev = r.Previous[j]
			}
			states[j] = RowState(reqs[i].Gates[j].Algorithm, n, prev)
		}
		out[i] = enforce.TakeResult{Allowed: r.Allowed, Room: r.Room, States: states}
	}
	return out, nil
}

// storeGate is g as rl_take counts it at now.
func storeGate(g enforce.CounterGate, now time.Time) (store.Gate, error) {
	sg := store.Gate{Key: g.Key, Limit: g.Limit, Burst: g.Burst, Enforce: g.Enforce, Window: g.Window,
		Caller: g.Parts.Caller, Target: g.Parts.Target, Definition: g.Parts.Definition}
	switch g.Algorithm {
	case enforce.AlgorithmTokenBucket:
		if g.Window <= 0 || g.Limit < 1 {
			return sg, fmt.Errorf("token bucket of %d per %s: the rate must be positive", g.Limit, g.Window)
		}
		sg.Algorithm, sg.ExpiresAt = store.AlgorithmTokenBucket, now
		return sg, nil
	case enforce.AlgorithmFixedWindow, "", enforce.AlgorithmSlidingWindow:
	default:
		return sg, fmt.Errorf("algorithm %q", g.Algorithm)
	}
	w := int64(g.Window / time.Second)
	if w <= 0 || (g.Algorithm == enforce.AlgorithmSlidingWindow && g.Window%time.Second != 0) {
		return sg, fmt.Errorf("window %s is not whole seconds", g.Window)
	}
	idx := floorDiv(now.Unix(), w)
	sg.WindowIndex, sg.ExpiresAt = idx, time.Unix((idx+2)*w, 0)
	sg.Algorithm = store.AlgorithmFixedWindow
	if g.Algorithm == enforce.AlgorithmSlidingWindow {
		sg.Algorithm = store.AlgorithmSlidingWindow
	}
	return sg, nil
}

// mapTakeError puts the enforce sentinels on a TakeBatch error, keeping the
// store's chain (context.DeadlineExceeded stays visible).
func mapTakeError(err error) error {
	switch {
	case errors.Is(err, store.ErrTimedOut):
		return fmt.Errorf("%w: %w: %w", enforce.ErrNotApplied, enforce.ErrTimedOut, err)
	case errors.Is(err, store.ErrNotApplied):
		return fmt.Errorf("%w: %w", enforce.ErrNotApplied, err)
	}
	return fmt.Errorf("%w: %w", enforce.ErrOutcomeUnknown, err)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Sweep removes counters whose windows ended before now, one replica at a
// time (the others skip), in bounded batches.
func (c *CounterStore) Sweep(ctx context.Context, now time.Time) (int64, error) {
	var removed int64
	for range sweepRounds {
		sctx, cancel := context.WithTimeout(ctx, sweepRoundTimeout)
		n, ran, err := c.st.SweepCounters(sctx, now, sweepBatch)
		cancel()
		if err != nil {
			return removed, err
		}
		removed += n
		if !ran || n < sweepBatch {
			break
		}
	}
	return removed, nil
}

// Source is an enforce.Source on the rlctl tables: loads are one
// repeatable-read transaction, change notices come from LISTEN on
// store.ChangeChannel (the triggers of migrations 001, 003 and 004).
type Source struct {
	st *store.Store
}

// NewSource reads the database pool connects to.
func NewSource(pool *pgxpool.Pool) *Source { return &Source{st: store.New(pool)} }

var _ enforce.Source = (*Source)(nil)

// Load reads everything.
func (s *Source) Load(ctx context.Context) (enforce.State, error) {
	rows, err := s.LoadTables(ctx, enforce.TablesRequest{AllDefinitions: true, AllMemberships: true, AllAdmins: true})
	return enforce.State(rows), err
}

// LoadTables reads what req names in one repeatable-read transaction, so
// an apply or a quarantine is either wholly in it or not at all.
func (s *Source) LoadTables(ctx context.Context, req enforce.TablesRequest) (enforce.Rows, error) {
	var rows enforce.Rows
	err := s.st.ReadTx(ctx, func(q *store.Queries) error {
		rows = enforce.Rows{}
		putDef := func(d ratelimit.Definition) error {
			rows.Definitions = append(rows.Definitions, d)
			return nil
		}
		putMember := func(m ratelimit.Membership) error {
			rows.Memberships = append(rows.Memberships, m)
			return nil
		}
		var err error
		switch {
		case req.AllDefinitions:
			err = q.EachDefinition(ctx, store.DefinitionFilter{}, putDef)
		case len(req.Definitions) > 0:
			err = q.EachDefinitionByID(ctx, req.Definitions, putDef)
		}
		if err != nil {
			return err
		}
		switch {
		case req.AllMemberships:
			err = q.EachMembership(ctx, store.MembershipFilter{}, putMember)
		case len(req.Memberships) > 0:
			err = q.EachMembershipByID(ctx, req.Memberships, putMember)
		}
		if err != nil {
			return err
		}
		switch {
		case req.AllAdmins:
			rows.Admins, err = q.ListAdmins(ctx)
		case len(req.Admins) > 0:
			rows.Admins, err = q.AdminsByID(ctx, req.Admins)
		}
		if err != nil {
			return err
		}
		on, err := q.EnforcementEnabled(ctx)
		rows.EnforcementOff = !on
		return err
	})
	if err != nil {
		return enforce.Rows{}, err
	}
	return rows, nil
}

// CountQuarantined counts the memberships whose quarantine applies at now,
// in the database (the same answer on every replica).
func (s *Source) CountQuarantined(ctx context.Context, now time.Time) (callers, targets int64, err error) {
	return s.st.CountQuarantined(ctx, now)
}

// Watch holds one connection LISTENing on store.ChangeChannel and
// store.AuthLockoutsChannel (lifted failed-credential lockouts) and turns
// each notification into a Change. The connection is closed, not handed
// back to the pool, when the stream ends.
func (s *Source) Watch(ctx context.Context, ready func(), notify func(enforce.Change)) error {
	conn, err := s.st.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// The connection is left in LISTEN state: close it rather than
		// hand it back to the pool.
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}()
	// The change channel last: its LISTEN is the connection's last
	// query, which is how pg_stat_activity tells the listener.
	for _, ch := range []string{store.AuthLockoutsChannel, store.ChangeChannel} {
		if _, err := conn.Exec(ctx, "listen "+ch); err != nil {
			return err
		}
	}
	ready()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if n.Channel == store.AuthLockoutsChannel {
			notify(AuthLockoutChange(n.Payload))
			continue
		}
		notify(Change(n.Payload))
	}
}

// AuthLockoutChange reads a notification payload of
// store.AuthLockoutsChannel (<scope>|<address key>); one it cannot read
// names every address.
func AuthLockoutChange(payload string) enforce.Change {
	if _, _, ok := counterkey.ParseAuthLockoutID(payload); ok {
		return enforce.Change{Table: enforce.TableAuthLockouts, IDs: []string{payload}}
	}
	return enforce.Change{Table: enforce.TableAuthLockouts, All: true}
}

// Change reads a notification payload of store.ChangeChannel.
func Change(payload string) enforce.Change {
	ch := store.ParseChange(payload)
	out := enforce.Change{IDs: ch.IDs, All: ch.All}
	switch ch.Table {
	case store.TableDefinitions:
		out.Table = enforce.TableDefinitions
	case store.TableMemberships:
		out.Table = enforce.TableMemberships
	case store.TableAdmins:
		out.Table = enforce.TableAdmins
	case store.TableSettings:
		out.Table = enforce.TableSettings
	default:
		out.Table, out.IDs, out.All = "", nil, true
	}
	return out
}

// RowState reads a counter row of rl_counters as its algorithm's state.
// It is the one place that knows the layout of migration 008: a window's
// row holds its count (a sliding window's previous window is the row of
// the window before), a token bucket's row holds its TAT in nanoseconds
// since the epoch in count (0: full).
func RowState(algorithm enforce.Algorithm, count, previous int64) enforce.GateState {
	switch algorithm {
	case enforce.AlgorithmTokenBucket:
		if count <= 0 {
			return enforce.GateState{}
		}
		return enforce.GateState{TAT: time.Unix(0, count)}
	case enforce.AlgorithmSlidingWindow:
		return enforce.GateState{Count: count, Previous: previous}
	}
	return enforce.GateState{Count: count}
}

// Capabilities: the PostgreSQL counter store gives back and resets.
func (c *CounterStore) Capabilities() enforce.CounterCapabilities {
	return enforce.CounterCapabilities{GiveBack: true, Reset: true}
}

// TakeLocal: every decision is the database's (the store does not
// declare Local).
func (c *CounterStore) TakeLocal(context.Context, enforce.TakeRequest, enforce.TakeResult, enforce.TakeFunc) (enforce.TakeResult, error) {
	return enforce.TakeResult{}, fmt.Errorf("postgres counters: take local: %w", enforce.ErrNotImplemented)
}

// Reset deletes every counter of the gates' keys, all windows and
// algorithms (enforce.CounterStore), within deadline.
func (c *CounterStore) Reset(ctx context.Context, gates []enforce.CounterGate, _, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	keys := make([]string, len(gates))
	for i, g := range gates {
		keys[i] = g.Key
	}
	if err := c.st.DeleteCounterKeys(ctx, keys); err != nil {
		return fmt.Errorf("reset counters: %w", err)
	}
	return nil
}

// Capabilities: the PostgreSQL source writes lockouts and counts
// quarantines in the database.
func (s *Source) Capabilities() enforce.SourceCapabilities {
	return enforce.SourceCapabilities{LockOut: true, CountQuarantined: true}
}

// LockOut writes an escalation lockout: the caller's quarantine until
// l.Until, audited as store.LockoutActor, in one transaction; its change
// notice reaches every replica (enforce.Source).
func (s *Source) LockOut(ctx context.Context, l enforce.Lockout) (bool, error) {
	return s.st.LockOut(ctx, store.Lockout{SubjectType: l.SubjectType, Subject: l.Subject, Until: l.Until, Now: l.Now, Reason: l.Reason})
}
