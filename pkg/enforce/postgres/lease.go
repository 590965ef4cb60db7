package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// ReturnUnused gives back the unused part of leased blocks
// (enforce.CounterStore), one row per statement, within deadline: a
// window's row (the block's window) loses the units, a bucket's TAT moves
// back by units × its emission interval, never before now.
func (c *CounterStore) ReturnUnused(ctx context.Context, rs []enforce.Return, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	out := make([]store.CounterReturn, 0, len(rs))
	for _, r := range rs {
		if r.Units < 1 {
			continue
		}
		sg, err := storeGate(r.Gate, r.Taken)
		if err != nil {
			return fmt.Errorf("return unused: %w", err)
		}
		cr := store.CounterReturn{Key: r.Gate.Key, WindowIndex: sg.WindowIndex, Units: r.Units}
		if r.Gate.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
			cr.TokenBucket, cr.Back, cr.Now = true, r.Units*algorithm.Interval(r.Gate.Window, r.Gate.Limit), r.Now.UnixNano()
		}
		out = append(out, cr)
	}
	if err := c.st.ReturnCounters(ctx, out); err != nil {
		return fmt.Errorf("return unused: %w", err)
	}
	return nil
}
