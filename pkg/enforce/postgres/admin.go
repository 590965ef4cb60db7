package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/counteradmin"
	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
)

// The counter store is also an counteradmin.Admin: it lists and resets
// rl_counters by caller, target and definition through the indexed
// columns that hold the parts of each key (CounterGate.Parts, stored by
// Take; migration 024), in one statement each.
var _ counteradmin.Admin = (*CounterStore)(nil)

// Counters lists the live counters sel selects (counteradmin.Admin).
func (c *CounterStore) Counters(ctx context.Context, sel counteradmin.Selector, now time.Time, limit int) (counteradmin.Page, error) {
	if err := sel.Check(); err != nil {
		return counteradmin.Page{}, fmt.Errorf("list counters: %w", err)
	}
	ask := 0
	if limit > 0 {
		ask = limit + 1
	}
	rows, err := c.st.CountersOf(ctx, storeSelector(sel), now, ask)
	if err != nil {
		return counteradmin.Page{}, err
	}
	page := counteradmin.Page{}
	if limit > 0 && len(rows) > limit {
		rows, page.Truncated = rows[:limit], true
	}
	page.Counters = liveCounters(rows)
	return page, nil
}

// ResetCounters zeroes the live counters sel selects, in one transaction
// that locks them in rl_take's order (store.Queries.ResetCounters), and
// returns them as they were (counteradmin.Admin).
func (c *CounterStore) ResetCounters(ctx context.Context, sel counteradmin.Selector, now time.Time) (counteradmin.Page, error) {
	if err := sel.Check(); err != nil {
		return counteradmin.Page{}, fmt.Errorf("reset counters: %w", err)
	}
	var rows []store.CounterRow
	err := c.st.InTx(ctx, func(q *store.Queries) error {
		var err error
		rows, err = q.ResetCounters(ctx, storeSelector(sel), now)
		return err
	})
	if err != nil {
		return counteradmin.Page{}, err
	}
	return counteradmin.Page{Counters: liveCounters(rows)}, nil
}

// storeSelector is sel as internal/store matches it.
func storeSelector(sel counteradmin.Selector) store.CounterSelector {
	out := store.CounterSelector{Caller: sel.Caller, Target: sel.Target, Definition: sel.Definition}
	if sel.Definition != "" {
		b := sel.Shared
		out.Shared = &store.SharedBuckets{Kind: string(b.Kind), WindowSeconds: b.WindowSeconds,
			Algorithm: string(b.Algorithm), Callers: b.Callers}
		if out.Shared.Algorithm == "" {
			out.Shared.Algorithm = string(enforce.AlgorithmFixedWindow)
		}
	}
	return out
}

// liveCounters reads rows by their keys' algorithms: a token bucket's
// count is its TAT in Unix nanoseconds (RowState).
func liveCounters(rows []store.CounterRow) []counteradmin.Counter {
	out := make([]counteradmin.Counter, len(rows))
	for i, r := range rows {
		algo := enforce.AlgorithmFixedWindow
		if k, err := counterkey.Parse(r.Key); err == nil && k.Algorithm != "" {
			algo = k.Algorithm
		}
		out[i] = counteradmin.Counter{Key: r.Key, Algorithm: algo, WindowIndex: r.WindowIndex,
			State: RowState(algo, r.Count, 0), ExpiresAt: r.ExpiresAt}
	}
	return out
}
