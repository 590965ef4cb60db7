package enforce

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
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
	pending changes

	full, partial                    atomic.Uint64
	definitions, memberships, admins atomic.Uint64
}

// note records a change to read at the next reload.
func (r *reloadState) note(ch Change) {
	r.mu.Lock()
	r.pending.add(ch)
	r.mu.Unlock()
}

// noteAll makes the next reload read everything.
func (r *reloadState) noteAll() {
	r.mu.Lock()
	r.pending.all = true
	r.mu.Unlock()
}

// take returns the pending changes and forgets them. A reload takes them
// before its transaction starts, so every change notified before then is
// in what it reads; one notified later stays pending for the next reload.
func (r *reloadState) take() changes {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.pending
	r.pending = changes{}
	return ch
}

// ReloadStats counts the snapshot reloads of an Enforcer since New: whole
// ones (at start, every CacheTTL, after the change listener reconnects, on
// Refresh) and ones that read only the rows change notifications named,
// and the rows all of them read by table. A change to one membership adds
// one partial reload and one membership row, however many memberships
// there are.
type ReloadStats struct {
	Full, Partial                    uint64
	Definitions, Memberships, Admins uint64
}

// ReloadStats reports the reloads so far.
func (e *Enforcer) ReloadStats() ReloadStats {
	r := &e.snaps.state
	return ReloadStats{Full: r.full.Load(), Partial: r.partial.Load(),
		Definitions: r.definitions.Load(), Memberships: r.memberships.Load(), Admins: r.admins.Load()}
}

// Refresh reloads definitions, memberships and admins now, whole. Changes
// arrive on their own within a second; this is for callers that must not
// wait.
func (e *Enforcer) Refresh(ctx context.Context) error { return e.snaps.loadAll(ctx) }

// reloader keeps the Enforcer's snapshot: it loads it whole at start and
// every TTL, reloads the rows the source's change notices name, and says
// which snapshot a decision may use. It is the one job of the Enforcer
// that runs beside the decisions rather than in them.
type reloader struct {
	source  Source
	ttl     time.Duration
	now     func() time.Time
	log     *slog.Logger
	metrics *metrics
	// recent are the lockouts the Enforcer's observers wrote, settled
	// once a reload reads them back (lockout_recent.go).
	recent *recentLockouts
	// guardChanged tells the Guard of a change to its own table, or, on a
	// reconnection, that it may have missed some (guard.go).
	guardChanged func(Change)

	snap atomic.Pointer[snapshot]
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

// usable returns the snapshot unless it is missing or too old to trust
// (reloads have been failing for three TTLs).
func (r *reloader) usable(now time.Time) *snapshot {
	s := r.snap.Load()
	if s == nil || now.Sub(s.loadedAt) > 3*r.ttl {
		r.metrics.cache.WithLabelValues("miss").Inc()
		return nil
	}
	r.metrics.cacheHit.Inc()
	return s
}

// loadAll reloads everything and swaps the new snapshot in.
func (r *reloader) loadAll(ctx context.Context) error {
	_, err := r.reloadChanges(ctx, true)
	return err
}

// reloadChanges reads what the pending notifications named (everything
// when full) and swaps the new snapshot in. It reports whether the reload
// read everything; with nothing pending it does nothing.
func (r *reloader) reloadChanges(ctx context.Context, full bool) (wasFull bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := r.state.take()
	prev := r.snap.Load()
	if full || prev == nil {
		ch.all = true
	}
	if ch.empty() {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	reload := r.started.Add(1)
	s, n, err := loadChanges(ctx, r.source, prev, ch, r.now())
	if err != nil {
		// What was taken is lost with the failed read: read everything
		// next time.
		r.state.noteAll()
		r.lastErr.Store(&err)
		r.metrics.errors.WithLabelValues("snapshot").Inc()
		return ch.all, err
	}
	// Counted before the swap: whoever sees the new snapshot sees its
	// reload counted.
	if ch.all {
		r.state.full.Add(1)
		r.metrics.reloads.WithLabelValues("full").Inc()
	} else {
		r.state.partial.Add(1)
		r.metrics.reloads.WithLabelValues("partial").Inc()
	}
	r.state.definitions.Add(uint64(n.definitions))
	r.state.memberships.Add(uint64(n.memberships))
	r.state.admins.Add(uint64(n.admins))
	r.metrics.rowsRead.WithLabelValues("definitions").Add(float64(n.definitions))
	r.metrics.rowsRead.WithLabelValues("memberships").Add(float64(n.memberships))
	r.metrics.rowsRead.WithLabelValues("admins").Add(float64(n.admins))
	r.snap.Store(s)
	// The lockouts this replica wrote that the new snapshot read again
	// are its own now (lockout_recent.go).
	if ch.all || ch.members.all {
		r.recent.settled(reload, nil)
	} else {
		r.recent.settled(reload, func(id string) bool { _, ok := ch.members.ids[id]; return ok })
	}
	r.metrics.setEnabled(!s.enforcementOff)
	r.lastErr.Store(nil)
	r.metrics.snapshotLoad.Observe(time.Since(start).Seconds())
	return ch.all, nil
}

// request asks the refresh loop for a reload; requests made while one is
// pending fold into it.
func (r *reloader) request() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// loop reloads what changed on request (a notification), everything
// at least every TTL, and retries failures with a growing delay.
func (r *reloader) loop(ctx context.Context) {
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

// listen watches the source's change notices and asks for a reload of the
// rows each names. When the stream breaks it starts it again and reloads
// everything, since notices sent meanwhile are lost.
func (r *reloader) listen(ctx context.Context) {
	backoff := 250 * time.Millisecond
	for first := true; ctx.Err() == nil; first = false {
		err := r.watchOnce(ctx, !first, func() { backoff = 250 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		r.metrics.errors.WithLabelValues("listen").Inc()
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
// On a reconnection (again) the Guard is told to drop what it cached: a
// lockout lifted while nobody listened is asked of the store again. The
// first connection has nothing to catch up on that matters as much, and
// keeps what the first decisions cached.
func (r *reloader) watchOnce(ctx context.Context, again bool, connected func()) error {
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
			r.guardChanged(Change{Table: TableAuthLockouts, All: true})
		}
		r.state.noteAll()
		r.request()
	}, func(ch Change) {
		r.metrics.notifications.Inc()
		if ch.Table == TableAuthLockouts {
			r.guardChanged(ch)
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
func (r *reloader) drainNotices(ctx context.Context, noted <-chan struct{}) {
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

// every runs fn each interval until ctx ends: the flush of aggregated
// log lines and the sweep share it.
func every(ctx context.Context, interval time.Duration, fn func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn(ctx)
		}
	}
}

// sweep has the counter store remove expired counters (the PostgreSQL
// store lets one replica at a time do it, in bounded batches).
func sweep(ctx context.Context, counters CounterStore, now time.Time, m *metrics, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	n, err := counters.Sweep(sctx, now)
	cancel()
	m.swept.Add(float64(n))
	if err != nil && ctx.Err() == nil {
		log.Warn("counter sweep failed", "err", err)
	}
}
