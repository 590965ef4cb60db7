package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
)

// tableWindows is how many windows -table-size runs every caller through.
const tableWindows = 10

// runTableSize runs cfg.keys callers (three gates each, as in the table)
// through tableWindows windows of the load's definitions (an hour each) at
// a simulated clock, one call per caller per window, once per algorithm on
// an emptied counter table, and reports the table's rows and size after the
// last window, then its rows once a sweep at the same instant has removed
// what expired.
func runTableSize(ctx context.Context, st *store.Store, cfg config) error {
	pool := st.Pool()
	var clock atomic.Int64
	enf, err := postgres.New(ctx, pool, enforce.Options{SweepInterval: -1, BackendTimeout: 5 * time.Second,
		Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		return err
	}
	defer enf.Close()
	counters := postgres.NewCounterStore(pool)
	gor := cfg.concurrency[len(cfg.concurrency)-1]
	fmt.Printf("counter table after %d callers ran through %d windows of an hour (three gates per call, %d goroutines, simulated clock)\n",
		cfg.keys, tableWindows, gor)
	fmt.Printf("%-14s %10s %12s %14s %12s\n", "algorithm", "rows", "rows/caller", "table+indexes", "after sweep")
	start := time.Now().Truncate(time.Hour).Add(2 * time.Hour)
	for _, alg := range cfg.algorithms {
		if _, err := pool.Exec(ctx, `truncate rl_counters`); err != nil {
			return err
		}
		if err := useAlgorithm(ctx, pool, enf, alg); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: %d windows of %d callers...\n", alg, tableWindows, cfg.keys)
		var at time.Time
		for w := range tableWindows {
			at = start.Add(time.Duration(w)*time.Hour + time.Second)
			clock.Store(at.UnixNano())
			// The snapshot is as old as the clock says: reload it at the
			// new time, or the Enforcer would count it stale.
			if err := enf.Refresh(ctx); err != nil {
				return err
			}
			var next atomic.Int64
			var failed atomic.Int64
			var wg sync.WaitGroup
			for range gor {
				wg.Go(func() {
					for {
						i := int(next.Add(1)) - 1
						if i >= cfg.keys || ctx.Err() != nil {
							return
						}
						if d, err := enf.Check(ctx, callFor("spread", i, cfg.keys)); err != nil || !d.Allowed {
							failed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if n := failed.Load(); n > 0 {
				return fmt.Errorf("%s: %d calls of window %d failed or were denied", alg, n, w+1)
			}
		}
		var rows, size int64
		if err := pool.QueryRow(ctx, `select count(*), pg_total_relation_size('rl_counters') from rl_counters`).Scan(&rows, &size); err != nil {
			return err
		}
		if _, err := counters.Sweep(ctx, at.Add(time.Millisecond)); err != nil {
			return err
		}
		var live int64
		if err := pool.QueryRow(ctx, `select count(*) from rl_counters`).Scan(&live); err != nil {
			return err
		}
		fmt.Printf("%-14s %10d %12.1f %11.1f MB %12d\n", alg, rows, float64(rows)/float64(cfg.keys), float64(size)/(1<<20), live)
	}
	return nil
}
