package enforce

import (
	"context"
	"time"
)

// The pause after a reload: at least minReloadGap, four times the reload's
// own duration for large stores, never more than maxReloadGap so a change
// still arrives within a second.
const (
	minReloadGap = 250 * time.Millisecond
	maxReloadGap = 700 * time.Millisecond
)

// usableSnapshot returns the snapshot unless it is missing or too old to
// trust (reloads have been failing for three TTLs).
func (e *Enforcer) usableSnapshot(now time.Time) *snapshot {
	s := e.snap.Load()
	if s == nil || now.Sub(s.loadedAt) > 3*e.opts.CacheTTL {
		e.metrics.cache.WithLabelValues("miss").Inc()
		return nil
	}
	e.metrics.cache.WithLabelValues("hit").Inc()
	return s
}

// refresh loads a new snapshot and swaps it in.
func (e *Enforcer) refresh(ctx context.Context) error {
	e.refreshMu.Lock()
	defer e.refreshMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	s, err := loadSnapshot(ctx, e.store, e.now())
	if err != nil {
		e.lastRefreshErr.Store(&err)
		e.metrics.errors.WithLabelValues("snapshot").Inc()
		return err
	}
	e.snap.Store(s)
	e.metrics.setEnabled(!s.enforcementOff)
	e.lastRefreshErr.Store(nil)
	e.metrics.snapshotLoad.Observe(time.Since(start).Seconds())
	return nil
}

// Refresh reloads definitions, memberships and admins now. Changes arrive on
// their own within a second; this is for callers that must not wait.
func (e *Enforcer) Refresh(ctx context.Context) error { return e.refresh(ctx) }

// requestRefresh asks the refresh loop for a reload; requests made while one
// is pending fold into it.
func (e *Enforcer) requestRefresh() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// refreshLoop reloads on request (a notification) and at least every TTL,
// retrying failures with a growing delay.
func (e *Enforcer) refreshLoop(ctx context.Context) {
	defer e.wg.Done()
	timer := time.NewTimer(e.opts.CacheTTL)
	defer timer.Stop()
	backoff := 250 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-timer.C:
		}
		next := e.opts.CacheTTL
		start := time.Now()
		if err := e.refresh(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			e.log.Warn("reload of definitions and memberships failed; keeping the last snapshot", "err", err, "retry_in", backoff)
			next, backoff = backoff, min(backoff*2, 10*time.Second)
		} else {
			backoff = 250 * time.Millisecond
			// Under a stream of writes every change notifies; reloading
			// back to back would spend a core on reloads (measured: rlapi's
			// PUT throughput fell from 2,900 to 1,700 req/s). Rest a little
			// after each reload: notifications that arrive meanwhile fold
			// into the next one, and changes still arrive within a second.
			pause := max(minReloadGap, 4*time.Since(start))
			select {
			case <-ctx.Done():
				return
			case <-time.After(min(pause, maxReloadGap)):
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// listen holds one connection LISTENing on rlctl_changes and asks for a
// reload on every notification. When the connection drops it reconnects and
// reloads, since notifications sent meanwhile are lost.
func (e *Enforcer) listen(ctx context.Context) {
	defer e.wg.Done()
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		err := e.listenOnce(ctx, func() { backoff = 250 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		e.metrics.errors.WithLabelValues("listen").Inc()
		e.log.Warn("change listener lost its connection; reconnecting", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (e *Enforcer) listenOnce(ctx context.Context, connected func()) error {
	conn, err := e.store.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	defer func() {
		// The connection is left in LISTEN state: close it rather than
		// hand it back to the pool.
		_ = conn.Conn().Close(context.Background())
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "listen rlctl_changes"); err != nil {
		return err
	}
	connected()
	// Changes made while we were not listening are picked up now.
	e.requestRefresh()
	for {
		if _, err := conn.Conn().WaitForNotification(ctx); err != nil {
			return err
		}
		e.metrics.notifications.Inc()
		e.requestRefresh()
	}
}

// sweepLoop removes expired counters in bounded batches; the store lets one
// replica at a time do it.
func (e *Enforcer) sweepLoop(ctx context.Context) {
	defer e.wg.Done()
	t := time.NewTicker(e.opts.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for range 10 { // at most 10 batches a round, so one sweep never hogs the database
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			n, ran, err := e.store.SweepCounters(sctx, e.now(), 5000)
			cancel()
			if err != nil {
				e.log.Warn("counter sweep failed", "err", err)
				break
			}
			e.metrics.swept.Add(float64(n))
			if !ran || n < 5000 {
				break
			}
		}
	}
}
