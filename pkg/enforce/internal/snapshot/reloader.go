package snapshot

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/source"
)

// The pause after a reload: at least minReloadGap (minChangeGap after a
// reload of only the changed rows), four times the reload's own duration
// for large stores, never more than maxReloadGap so a change still arrives
// within a second.
const (
	minReloadGap = 250 * time.Millisecond
	minChangeGap = 50 * time.Millisecond
	maxReloadGap = 700 * time.Millisecond
)

// notifyDrain is how long the listener waits for more notifications after
// one arrives before it asks for a reload, and maxNotifyDrain how long it
// keeps taking them under a steady stream. PostgreSQL sends the
// notifications of one transaction back to back, so waiting this little
// lets one reload take all of them (an apply's definitions and memberships
// arrive in the snapshot together).
const (
	notifyDrain    = 2 * time.Millisecond
	maxNotifyDrain = 20 * time.Millisecond
)

// reloadState is what the listener tells the refresh loop, and what the
// reloads did.
type reloadState struct {
	mu      sync.Mutex
	pending Changes

	full, partial                    atomic.Uint64
	definitions, memberships, admins atomic.Uint64
}

// note records a change to read at the next reload.
func (r *reloadState) note(ch source.Change) {
	r.mu.Lock()
	r.pending.Add(ch)
	r.mu.Unlock()
}

// noteAll makes the next reload read everything.
func (r *reloadState) noteAll() {
	r.mu.Lock()
	r.pending.All = true
	r.mu.Unlock()
}

// take returns the pending changes and forgets them. A reload takes them
// before its transaction starts, so every change notified before then is
// in what it reads; one notified later stays pending for the next reload.
func (r *reloadState) take() Changes {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.pending
	r.pending = Changes{}
	return ch
}

// Stats counts the reloads since the Reloader began: whole ones and ones
// that read only the rows change notices named, and the rows all of them
// read by table (enforce.ReloadStats).
type Stats struct {
	Full, Partial                    uint64
	Definitions, Memberships, Admins uint64
}

// Stats reports the reloads so far.
func (r *Reloader[V]) Stats() Stats {
	st := &r.state
	return Stats{Full: st.full.Load(), Partial: st.partial.Load(),
		Definitions: st.definitions.Load(), Memberships: st.memberships.Load(), Admins: st.admins.Load()}
}

// Hooks are what a Reloader tells its owner (each may be nil).
type Hooks struct {
	// Reloaded: a reload succeeded (whole or not), read rows, took took;
	// the new snapshot's master switch is off or not. Called before the
	// snapshot is published, so whoever sees it sees its reload counted.
	Reloaded func(full bool, rows RowsRead, took time.Duration, enforcementOff bool)
	// Failed: a reload ("snapshot") or the change stream ("listen")
	// failed.
	Failed func(kind string)
	// Notified: a change notice arrived.
	Notified func()
	// Foreign: a change notice of a table the snapshot does not hold
	// (source.TableAuthLockouts), or, when the change stream reconnects,
	// that such notices may have been missed (All). The core's Guard
	// caches those rows.
	Foreign func(source.Change)
}

// NewReloader returns a Reloader of src's snapshots, reloaded whole at
// least every ttl; newViews makes each snapshot's empty cache, recent
// are the lockouts the owner wrote (settled as reloads read them back).
// Nothing runs until LoadAll, Loop and Listen are called.
func NewReloader[V any](src source.Source, ttl time.Duration, now func() time.Time, log *slog.Logger,
	newViews func() *V, recent *Recent, hooks Hooks) *Reloader[V] {
	return &Reloader[V]{source: src, ttl: ttl, now: now, log: log, newViews: newViews, recent: recent, hooks: hooks,
		kick: make(chan struct{}, 1)}
}

// Reloader keeps an Enforcer's snapshot: it loads it whole at start and
// every TTL, reloads the rows the source's change notices name, and says
// which snapshot a decision may use. It is the one job of the Enforcer
// that runs beside the decisions rather than in them.
type Reloader[V any] struct {
	source   source.Source
	ttl      time.Duration
	now      func() time.Time
	log      *slog.Logger
	newViews func() *V
	// recent are the lockouts the owner wrote, settled once a reload
	// reads them back (recent.go).
	recent *Recent
	hooks  Hooks

	snap atomic.Pointer[Snapshot[V]]
	// mu serializes snapshot loads.
	mu sync.Mutex
	// lastErr is set while reloads fail.
	lastErr atomic.Pointer[error]
	// state holds the changes notified since the last reload and counts
	// the reloads; started counts the reloads begun.
	state   reloadState
	started atomic.Uint64
	kick    chan struct{}
}

// Usable returns the snapshot unless it is missing or too old to trust
// (reloads have been failing for three TTLs).
func (r *Reloader[V]) Usable(now time.Time) *Snapshot[V] {
	s := r.snap.Load()
	if s == nil || now.Sub(s.LoadedAt) > 3*r.ttl {
		return nil
	}
	return s
}

// Current is the latest snapshot, however old (nil before the first
// load).
func (r *Reloader[V]) Current() *Snapshot[V] { return r.snap.Load() }

// LastErr is the error of the last reload while reloads fail, else nil.
func (r *Reloader[V]) LastErr() error {
	if p := r.lastErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Started is how many reloads have started: a lockout written now is read
// back by a later one (Recent.Add).
func (r *Reloader[V]) Started() uint64 { return r.started.Load() }

// LoadAll reloads everything and swaps the new snapshot in.
func (r *Reloader[V]) LoadAll(ctx context.Context) error {
	_, err := r.reloadChanges(ctx, true)
	return err
}

// reloadChanges reads what the pending notifications named (everything
// when full) and swaps the new snapshot in. It reports whether the reload
// read everything; with nothing pending it does nothing.
func (r *Reloader[V]) reloadChanges(ctx context.Context, full bool) (wasFull bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.state.take()
	prev := r.snap.Load()
	if full || prev == nil {
		ch.All = true
	}
	if ch.empty() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	reload := r.started.Add(1)
	s, n, err := Load(ctx, r.source, prev, ch, r.now(), r.newViews)
	if err != nil {
		// What was taken is lost with the failed read: read everything
		// next time.
		r.state.noteAll()
		r.lastErr.Store(&err)
		r.failed("snapshot")
		return ch.All, err
	}
	// Counted before the swap: whoever sees the new snapshot sees its
	// reload counted.
	if ch.All {
		r.state.full.Add(1)
	} else {
		r.state.partial.Add(1)
	}
	r.state.definitions.Add(uint64(n.Definitions))
	r.state.memberships.Add(uint64(n.Memberships))
	r.state.admins.Add(uint64(n.Admins))
	if r.hooks.Reloaded != nil {
		r.hooks.Reloaded(ch.All, n, time.Since(start), s.EnforcementOff)
	}
	r.snap.Store(s)
	// The lockouts this replica wrote that the new snapshot read again
	// are its own now (recent.go).
	if r.recent != nil {
		if ch.All || ch.Members.All {
			r.recent.settled(reload, nil)
		} else {
			r.recent.settled(reload, func(id string) bool { _, ok := ch.Members.ids[id]; return ok })
		}
	}
	r.lastErr.Store(nil)
	return ch.All, nil
}

func (r *Reloader[V]) failed(kind string) {
	if r.hooks.Failed != nil {
		r.hooks.Failed(kind)
	}
}

func (r *Reloader[V]) foreign(ch source.Change) {
	if r.hooks.Foreign != nil {
		r.hooks.Foreign(ch)
	}
}

// request asks the refresh loop for a reload; requests made while one is
// pending fold into it.
func (r *Reloader[V]) request() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Loop reloads what changed on request (a notification), everything
// at least every TTL, and retries failures with a growing delay.
func (r *Reloader[V]) Loop(ctx context.Context) {
	timer := time.NewTimer(r.ttl)
	defer timer.Stop()
	backoff := 250 * time.Millisecond
	for {
		full := false
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-timer.C:
			full = true
		}
		start := time.Now()
		wasFull, err := r.reloadChanges(ctx, full)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.log.Warn("reload of definitions and memberships failed; keeping the last snapshot", "err", err, "retry_in", backoff)
			resetTimer(timer, backoff)
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		backoff = 250 * time.Millisecond
		if wasFull {
			// The TTL runs from the last whole reload: a stream of
			// changes must not postpone the safety net forever.
			resetTimer(timer, r.ttl)
		}
		// Under a stream of writes every change notifies; reloading back
		// to back would spend a core on reloads (measured: rlapi's PUT
		// throughput fell from 2,900 to 1,700 req/s with whole reloads).
		// Rest a little after each reload: notifications that arrive
		// meanwhile fold into the next one, and changes still arrive
		// within a second.
		floor := minReloadGap
		if !wasFull {
			floor = minChangeGap
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(max(floor, 4*time.Since(start)), maxReloadGap)):
		}
	}
}

func resetTimer(t *time.Timer, d time.Duration) {
	if !t.Stop() {
		select {
		case <-t.C:
		default:
		}
	}
	t.Reset(d)
}

// Listen watches the source's change notices and asks for a reload of the
// rows each names. When the stream breaks it starts it again and reloads
// everything, since notices sent meanwhile are lost.
func (r *Reloader[V]) Listen(ctx context.Context) {
	backoff := 250 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		err := r.watchOnce(ctx, !first, func() { backoff = 250 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		r.failed("listen")
		r.log.Warn("change listener lost its connection; reconnecting", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// watchOnce runs one Watch of the source. Each notice is recorded as it
// arrives; the reload is asked for once the burst is over (no notice for
// notifyDrain, or maxNotifyDrain after its first), so that one reload takes
// a whole transaction's notices.
//
// On a reconnection (again) the owner is told (Hooks.Foreign) to drop what it cached: a
// lockout lifted while nobody listened is asked of the store again. The
// first connection has nothing to catch up on that matters as much, and
// keeps what the first decisions cached.
func (r *Reloader[V]) watchOnce(ctx context.Context, again bool, connected func()) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	noted := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.drainNotices(wctx, noted)
	}()
	err := r.source.Watch(wctx, func() {
		connected()
		// Changes made while we were not listening are picked up now;
		// a lockout lifted meanwhile is asked of the store again.
		if again {
			r.foreign(source.Change{Table: source.TableAuthLockouts, All: true})
		}
		r.state.noteAll()
		r.request()
	}, func(ch source.Change) {
		if r.hooks.Notified != nil {
			r.hooks.Notified()
		}
		if ch.Table == source.TableAuthLockouts {
			r.foreign(ch)
			return
		}
		r.state.note(ch)
		select {
		case noted <- struct{}{}:
		default:
		}
	})
	cancel()
	<-done
	if err == nil && ctx.Err() == nil {
		err = errors.New("the change stream ended")
	}
	return err
}

// drainNotices asks for a reload after each burst of notices.
func (r *Reloader[V]) drainNotices(ctx context.Context, noted <-chan struct{}) {
	quiet := time.NewTimer(time.Hour)
	quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-noted:
		}
		for first := time.Now(); time.Since(first) < maxNotifyDrain; {
			quiet.Reset(notifyDrain)
			select {
			case <-ctx.Done():
				quiet.Stop()
				return
			case <-noted:
				quiet.Stop()
				continue
			case <-quiet.C:
			}
			break
		}
		r.request()
	}
}
