package main

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// sweepConfig is the -sweep-rate mode: a paced load on one-second windows
// with the Enforcer's own sweeper running, watching how many counter rows
// are created and how many the table still holds, during the load and
// after it.
type sweepConfig struct {
	rate        int           // decisions a second
	duration    time.Duration // of the load
	after       time.Duration // watched after the load
	interval    time.Duration // enforce.Options.SweepInterval (0: the default)
	keys        int           // distinct callers
	concurrency int
}

// runSweep paces rate decisions a second, each taking a caller and a
// caller_target gate on one-second windows, so nearly every decision
// creates two counter rows that expire two seconds later.
func runSweep(ctx context.Context, st *store.Store, cfg sweepConfig) error {
	if err := seedSweep(ctx, st.Pool(), cfg.keys); err != nil {
		return err
	}
	enf, err := postgres.New(ctx, st.Pool(), enforce.Options{SweepInterval: cfg.interval, Workers: 2})
	if err != nil {
		return err
	}
	defer enf.Close()

	pool := st.Pool()
	sample := func() (rows, expired, inserted, deleted int64, err error) {
		err = pool.QueryRow(ctx, `select (select count(*) from rl_counters), (select count(*) from rl_counters where expires_at <= now()),
			coalesce((select n_tup_ins from pg_stat_user_tables where relname = 'rl_counters'), 0),
			coalesce((select n_tup_del from pg_stat_user_tables where relname = 'rl_counters'), 0)`).Scan(&rows, &expired, &inserted, &deleted)
		return
	}
	_, _, ins0, del0, err := sample()
	if err != nil {
		return err
	}
	fmt.Printf("sweep load: %d decisions/s for %s on one-second windows (caller + caller_target gate), %d callers, sweep interval %s, %d goroutines\n",
		cfg.rate, cfg.duration, cfg.keys, cmpOr(cfg.interval, 10*time.Second), cfg.concurrency)
	fmt.Printf("%8s %12s %10s %12s %12s %12s\n", "t", "decisions/s", "rows", "expired", "created", "deleted")

	tokens := make(chan struct{}, cfg.rate)
	loadCtx, stopLoad := context.WithTimeout(ctx, cfg.duration)
	defer stopLoad()
	var decided, missed atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { // pacer: rate/100 tokens every 10 ms
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		per := max(cfg.rate/100, 1)
		for {
			select {
			case <-loadCtx.Done():
				close(tokens)
				return
			case <-t.C:
				for range per {
					select {
					case tokens <- struct{}{}:
					default:
						missed.Add(1)
					}
				}
			}
		}
	})
	var next atomic.Int64
	for range cfg.concurrency {
		wg.Go(func() {
			for range tokens {
				i := int(next.Add(1))
				c := enforce.Call{Username: "load-sweep-user-" + strconv.Itoa(i%cfg.keys), TargetType: ratelimit.EntityMCPServer,
					TargetName: "load-sweep-server-" + strconv.Itoa(i%100)}
				if _, err := enf.Check(context.Background(), c); err == nil {
					decided.Add(1)
				}
			}
		})
	}
	start := time.Now()
	end := start.Add(cfg.duration + cfg.after)
	var last int64
	lastAt := start
	for t := time.NewTicker(5 * time.Second); ; {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		rows, expired, ins, del, err := sample()
		if err != nil {
			return err
		}
		d := decided.Load()
		now := time.Now()
		fmt.Printf("%8s %12.0f %10d %12d %12d %12d\n", now.Sub(start).Round(time.Second), float64(d-last)/now.Sub(lastAt).Seconds(),
			rows, expired, ins-ins0, del-del0)
		last, lastAt = d, now
		if now.After(end) {
			break
		}
	}
	wg.Wait()
	fmt.Printf("\n%d decisions in %s (%.0f/s), %d paced decisions missed (workers busy)\n", decided.Load(), cfg.duration,
		float64(decided.Load())/cfg.duration.Seconds(), missed.Load())
	return nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// seedSweep writes a caller and a caller_target definition on one-second
// windows with limits no run reaches, and keys callers in their group.
func seedSweep(ctx context.Context, pool *pgxpool.Pool, keys int) error {
	const high = 1_000_000_000
	if _, err := pool.Exec(ctx, `
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, agent_max_requests, mode, updated_by)
		values ('caller:group:load-sweep:1', 'caller', 'group', 'load-sweep', 1, $1, $1, 'enforce', 'load'),
		       ('caller_target:group:load-sweep:1', 'caller_target', 'group', 'load-sweep', 1, $1, $1, 'enforce', 'load')
		on conflict (id) do nothing`, high); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `
		insert into rl_memberships (subject_type, subject, groups)
		select 'user', 'load-sweep-user-' || i, '{load-sweep}' from generate_series(0, $1 - 1) i
		on conflict do nothing`, keys)
	return err
}
