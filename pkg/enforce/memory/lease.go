package memory

import (
	"context"
	"fmt"
	"hash/maphash"

	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// ReturnUnused takes back the unused part of leased blocks
// (enforce.CounterStore): a window's count of the block's window goes
// down (never below zero), a bucket's TAT moves back, never before now.
func (s *Store) ReturnUnused(ctx context.Context, rs []enforce.Return, deadline time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: return unused: %w: %w", enforce.ErrTimedOut, err)
	}
	for _, r := range rs {
		if r.Units < 1 || r.Gate.KnownAlgorithm() == "" || r.Gate.Window <= 0 {
			continue
		}
		algo := r.Gate.KnownAlgorithm()
		id := counterID{key: r.Gate.Key, algo: algo}
		if algo != enforce.AlgorithmTokenBucket {
			id.window, id.index = r.Gate.Window, floorDiv(r.Taken.UnixNano(), int64(r.Gate.Window))
		}
		sh := &s.shards[maphash.String(s.seed, r.Gate.Key)%shardCount]
		sh.mu.Lock()
		if c := sh.counters[id]; c != nil {
			if algo == enforce.AlgorithmTokenBucket {
				back := r.Units * algorithm.Interval(r.Gate.Window, r.Gate.Limit)
				if now := r.Now.UnixNano(); c.end > now {
					c.end = max(c.end-back, now)
				}
			} else {
				c.count = max(c.count-r.Units, 0)
			}
		}
		sh.mu.Unlock()
	}
	return nil
}
