package store

import (
	"context"
	"fmt"
)

// CounterReturn is unused capacity a lease gives back to one counter
// (pkg/enforce's leases): Units off a window's count, or (a token bucket,
// Back > 0) Back ns off its TAT, never before Now (ns).
type CounterReturn struct {
	Key         string
	WindowIndex int64
	// Units is taken off a window's count (never below zero).
	Units int64
	// TokenBucket: the row holds a TAT; Back ns are taken off it, never
	// to before Now.
	TokenBucket bool
	Back, Now   int64
}

// ReturnCounters gives back each of rs in its own statement (one row
// each, so it never holds one row's lock while waiting for another's:
// no lock order to keep with rl_take). A counter gone (its window swept,
// or reset) is left alone.
func (s *Store) ReturnCounters(ctx context.Context, rs []CounterReturn) error {
	for _, r := range rs {
		var err error
		if r.TokenBucket {
			_, err = s.pool.Exec(ctx, `update rl_counters set count = greatest(count - $3, $4)
				where key = $1 and window_index = $2 and count > $4`, CounterKeyText(r.Key), r.WindowIndex, r.Back, r.Now)
		} else {
			_, err = s.pool.Exec(ctx, `update rl_counters set count = greatest(count - $3, 0)
				where key = $1 and window_index = $2 and count > 0`, CounterKeyText(r.Key), r.WindowIndex, r.Units)
		}
		if err != nil {
			return fmt.Errorf("return counter %q: %w", r.Key, interpretError(err))
		}
	}
	return nil
}
