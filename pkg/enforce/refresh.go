package enforce

import (
	"context"
	"log/slog"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce/internal/metrics"
)

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
func (e *Enforcer) ReloadStats() ReloadStats { return ReloadStats(e.snaps.Stats()) }

// Refresh reloads definitions, memberships and admins now, whole. Changes
// arrive on their own within a second; this is for callers that must not
// wait.
func (e *Enforcer) Refresh(ctx context.Context) error { return e.snaps.LoadAll(ctx) }

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
func sweep(ctx context.Context, counters CounterStore, now time.Time, m *metrics.Metrics, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	n, err := counters.Sweep(sctx, now)
	cancel()
	m.Swept.Add(float64(n))
	if err != nil && ctx.Err() == nil {
		log.Warn("counter sweep failed", "err", err)
	}
}
