// Command rlenforce-load measures pkg/enforce against PostgreSQL: decisions
// per second and latency percentiles for three gates per decision, on spread
// keys and on one hot key, at several concurrencies, beside a baseline that
// does what the reference design does (one durable conditional increment
// per gate, one gate after another). It prints one table and the ratios.
//
//	go run ./cmd/rlenforce-load -dsn "$DATABASE_URL" -duration 10s
//
// -store runs the table's "ours" rows once per counter store: postgres (the
// default), redis (a standalone server, -redis-url or REDIS_URL) and
// redis-cluster (-redis-cluster-url or REDIS_CLUSTER_URL), comma-separated;
// the configuration stays in PostgreSQL either way. Rows are labelled ours
// (PostgreSQL), redis and redis-cl, followed by each Redis store's ratio to
// PostgreSQL:
//
//	go run ./cmd/rlenforce-load -store postgres,redis,redis-cluster -modes ours -concurrency 1,64
//
// -leases both adds, per store, rows labelled +lease: an Enforcer with
// leases for hot keys (-lease-time, -lease-replicas, -lease-keys) on the
// same counters; -leases on runs only those:
//
//	go run ./cmd/rlenforce-load -store postgres,redis,redis-cluster -leases both -modes ours -concurrency 1,64
//
// Every row reports, beside the slowest decision (max), sched-max: the
// longest a runnable goroutine of the process waited for a CPU during the
// row (runtime/metrics). -modes spin adds rows without an Enforcer whose
// decisions are a 3 µs busy loop: at 64 goroutines that never block, their
// max is what the Go scheduler alone adds (docs/performance.md, leases).
//
// -cpu prints a second table after the first: per row, this process's CPU
// per decision (getrusage: the deciding side, what an rlapi or gateway
// replica spends) and, for the Redis stores, every master's CPU per
// decision from INFO cpu (the main thread, which runs the scripts, and
// every thread) and INFO commandstats (script calls and the time inside
// them) read before and after the row, each master's share, and the
// decisions/s one master's core carries at that cost (docs/scaling.md, "A
// capacity model"). A cluster's masters come from CLUSTER NODES. The Redis
// figures count everything the servers did during the row: run it on
// servers nothing else uses.
//
//	go run ./cmd/rlenforce-load -store redis,redis-cluster -leases both -modes ours -concurrency 1,64 -cpu
//
// -algorithm runs the table once per algorithm (fixed_window,
// sliding_window, token_bucket; comma-separated), switching the load's
// definitions between them, and prints each one's ratio to the fixed window.
//
// With -sweep-rate it measures the counter sweeper instead: a paced load on
// one-second windows, the table's rows sampled every five seconds during the
// load and for -sweep-after beyond it (docs/performance.md). With
// -table-size it runs -keys callers through ten windows at a simulated
// clock, once per algorithm, and reports the counter table's rows and size.
//
// It needs a database it may fill: it applies the migrations, writes its own
// definitions and memberships (prefix "load-"), and drops its baseline table
// when done. It only talks to the database named by -dsn.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/rlctl/rlctl/internal/cputime"
	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/lease"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	redisstore "github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rlenforce-load:", err)
		os.Exit(1)
	}
}

type config struct {
	dsn         string
	duration    time.Duration
	keys        int
	concurrency []int
	maxConns    int
	modes       []string
	shapes      []string
	algorithms  []string
	stores      []string
	// leases: "off", "on" (every store's rows with leases only) or
	// "both" (each store without and with leases).
	leases string
}

// storeLabel is how the table names the "ours" rows of a counter store.
var storeLabel = map[string]string{"postgres": "ours", "redis": "redis", "redis-cluster": "redis-cl"}

func run() error {
	var (
		cfg     config
		conc    string
		modes   string
		shapes  string
		maxConn int
	)
	flag.StringVar(&cfg.dsn, "dsn", os.Getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL)")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each run")
	flag.IntVar(&cfg.keys, "keys", 10000, "distinct callers (and targets) for the spread runs")
	flag.StringVar(&conc, "concurrency", "1,8,64", "goroutines per run, comma-separated")
	flag.IntVar(&maxConn, "max-conns", 12, "pool size for both implementations")
	workers := flag.Int("workers", 0, "enforce.Options.Workers (0: the default)")
	flag.StringVar(&modes, "modes", "ours,baseline", "implementations to run: ours, baseline, spin (no Enforcer: a 3 µs busy loop per decision, the scheduler's floor for max)")
	flag.StringVar(&shapes, "shapes", "spread,hot", "key shapes to run")
	algorithms := flag.String("algorithm", ratelimit.AlgorithmFixedWindow, "algorithms to run the load's definitions with, comma-separated: "+strings.Join(ratelimit.Algorithms(), ", "))
	tableSize := flag.Bool("table-size", false, "instead of the table: run -keys callers through ten windows per algorithm at a simulated clock and report the counter table's size")
	var sweep sweepConfig
	flag.IntVar(&sweep.rate, "sweep-rate", 0, "instead of the table: pace this many decisions/s on one-second windows, sweeper on, and watch the counter table")
	flag.DurationVar(&sweep.after, "sweep-after", 2*time.Minute, "with -sweep-rate: how long to watch the table after the load")
	flag.DurationVar(&sweep.interval, "sweep-interval", 0, "with -sweep-rate: enforce.Options.SweepInterval (0: the default)")
	stores := flag.String("store", "postgres", "counter stores the ours rows run on, comma-separated: postgres, redis, redis-cluster")
	redisURL := flag.String("redis-url", os.Getenv("REDIS_URL"), "the standalone Redis of -store redis (REDIS_URL)")
	redisClusterURL := flag.String("redis-cluster-url", os.Getenv("REDIS_CLUSTER_URL"), "the Redis Cluster of -store redis-cluster (REDIS_CLUSTER_URL)")
	flag.StringVar(&cfg.leases, "leases", "off", "leases for hot keys: off, on (the ours rows lease) or both (each store without and with leases, rows labelled +lease)")
	leaseTime := flag.Duration("lease-time", time.Second, "with -leases: lease.Options.Time")
	leaseReplicas := flag.Int("lease-replicas", 4, "with -leases: lease.Options.Replicas (the block's divisor)")
	leaseKeys := flag.String("lease-keys", "hot", "with -leases: which keys lease, hot (seen more than 100 times a second) or all")
	cpu := flag.Bool("cpu", false, "after the table, print CPU per decision: this process's (getrusage) and, for the Redis stores, each master's (INFO cpu and commandstats)")
	flag.Parse()
	if cfg.leases != "off" && cfg.leases != "on" && cfg.leases != "both" {
		return fmt.Errorf("-leases: %q is not off, on or both", cfg.leases)
	}
	if *leaseKeys != "hot" && *leaseKeys != "all" {
		return fmt.Errorf("-lease-keys: %q is not hot or all", *leaseKeys)
	}
	leaseOpts := lease.Options{Time: *leaseTime, Replicas: *leaseReplicas, All: *leaseKeys == "all", Timeout: 5 * time.Second}
	for _, s := range strings.Split(*stores, ",") {
		s = strings.TrimSpace(s)
		if _, ok := storeLabel[s]; !ok {
			return fmt.Errorf("-store: %q is not one of postgres, redis, redis-cluster", s)
		}
		if (s == "redis" && *redisURL == "") || (s == "redis-cluster" && *redisClusterURL == "") {
			return fmt.Errorf("-store %s: no server: set -%s-url (scripts/redisdev.sh %s prints one)", s,
				map[string]string{"redis": "redis", "redis-cluster": "redis-cluster"}[s], map[string]string{"redis": "url", "redis-cluster": "cluster-url"}[s])
		}
		cfg.stores = append(cfg.stores, s)
	}
	if cfg.dsn == "" {
		return fmt.Errorf("no database: set -dsn or DATABASE_URL")
	}
	for _, c := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("-concurrency: %q is not a count between 1 and 1024", c)
		}
		cfg.concurrency = append(cfg.concurrency, n)
	}
	cfg.maxConns = maxConn
	cfg.modes = strings.Split(modes, ",")
	cfg.shapes = strings.Split(shapes, ",")
	for _, a := range strings.Split(*algorithms, ",") {
		a = strings.TrimSpace(a)
		if !slices.Contains(ratelimit.Algorithms(), a) {
			return fmt.Errorf("-algorithm: %q is not one of %s", a, strings.Join(ratelimit.Algorithms(), ", "))
		}
		cfg.algorithms = append(cfg.algorithms, a)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	st, err := store.Open(ctx, cfg.dsn, store.Opts{MaxConns: int32(cfg.maxConns), ApplicationName: "rlenforce-load"})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := migrate.Up(ctx, st.Pool()); err != nil {
		return err
	}
	if sweep.rate > 0 {
		sweep.duration, sweep.keys, sweep.concurrency = cfg.duration, cfg.keys, cfg.concurrency[len(cfg.concurrency)-1]
		return runSweep(ctx, st, sweep)
	}
	fmt.Fprintf(os.Stderr, "seeding %d callers and targets...\n", cfg.keys)
	if err := seed(ctx, st.Pool(), cfg.keys); err != nil {
		return err
	}
	if *tableSize {
		return runTableSize(ctx, st, cfg)
	}
	base, err := newBaseline(ctx, st.Pool())
	if err != nil {
		return err
	}
	defer base.drop()

	enf, err := postgres.New(ctx, st.Pool(), enforce.Options{SweepInterval: -1, BackendTimeout: 5 * time.Second, Workers: *workers})
	if err != nil {
		return err
	}
	defer enf.Close()
	enforcers := map[string]*enforce.Enforcer{}
	prefix := "load" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	for _, name := range cfg.stores {
		if cfg.leases != "off" {
			// The same counters, decided through a lease layer (rows
			// "+lease"), closed after its Enforcer.
			var counters enforce.CounterStore = postgres.NewCounterStore(st.Pool())
			if name != "postgres" {
				u := *redisURL
				if name == "redis-cluster" {
					u = *redisClusterURL
				}
				rs, err := redisstore.Open(ctx, u, redisstore.Options{Prefix: prefix})
				if err != nil {
					return fmt.Errorf("-store %s: %w", name, err)
				}
				defer rs.Close()
				counters = rs
			}
			layer, err := lease.New(counters, leaseOpts)
			if err != nil {
				return fmt.Errorf("-store %s: %w", name, err)
			}
			e, err := postgres.New(ctx, st.Pool(), enforce.Options{Counters: layer, SweepInterval: -1,
				BackendTimeout: 5 * time.Second, Workers: *workers, OnClose: layer.Close})
			if err != nil {
				layer.Close()
				return err
			}
			defer e.Close()
			enforcers[name+"+lease"] = e
			if cfg.leases == "on" {
				continue
			}
		}
		if name == "postgres" {
			enforcers[name] = enf
			continue
		}
		u := *redisURL
		if name == "redis-cluster" {
			u = *redisClusterURL
		}
		rs, err := redisstore.Open(ctx, u, redisstore.Options{Prefix: prefix})
		if err != nil {
			return fmt.Errorf("-store %s: %w", name, err)
		}
		e, err := postgres.New(ctx, st.Pool(), enforce.Options{Counters: rs, OnClose: rs.Close, SweepInterval: -1,
			BackendTimeout: 5 * time.Second, Workers: *workers})
		if err != nil {
			rs.Close()
			return err
		}
		defer e.Close()
		enforcers[name] = e
	}

	// -cpu: one watch per Redis store, on every master.
	watches := map[string]*redisWatch{}
	if *cpu {
		for _, name := range cfg.stores {
			u := map[string]string{"redis": *redisURL, "redis-cluster": *redisClusterURL}[name]
			if u == "" {
				continue
			}
			w, err := openRedisWatch(ctx, u)
			if err != nil {
				return fmt.Errorf("-cpu, -store %s: %w", name, err)
			}
			defer w.Close()
			watches[name] = w
			fmt.Fprintf(os.Stderr, "-cpu: %s: masters %s\n", name, strings.Join(w.addrs, ", "))
		}
	}
	var cpuRows []cpuRow

	fmt.Printf("machine: %d CPUs (GOMAXPROCS %d), %s; pool %d connections; three gates per decision; %s per run\n\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version(), cfg.maxConns, cfg.duration)
	fmt.Printf("%-14s %-14s %-7s %5s %12s %10s %10s %10s %10s %8s\n", "algorithm", "impl", "keys", "gor", "decisions/s", "p50", "p99", "max", "sched-max", "errors")
	results := map[string]result{}
	for ai, alg := range cfg.algorithms {
		if err := useAlgorithm(ctx, st.Pool(), enf, alg); err != nil {
			return err
		}
		for _, e := range enforcers {
			if err := e.Refresh(ctx); err != nil {
				return err
			}
		}
		// Warm up: one pass over every key for each implementation, so the
		// runs measure steady state (rows exist, plans are cached), not the
		// first call of a window.
		fmt.Fprintf(os.Stderr, "%s: warming up %d keys...\n", alg, cfg.keys)
		for i := range cfg.keys {
			c := callFor("spread", i, cfg.keys)
			for _, e := range enforcers {
				if _, err := e.Check(ctx, c); err != nil {
					return err
				}
			}
			if ai == 0 {
				if err := base.decide(ctx, c); err != nil {
					return err
				}
			}
		}
		for _, shape := range cfg.shapes {
			for _, n := range cfg.concurrency {
				var runs []string // mode, or ours/<store>
				for _, mode := range cfg.modes {
					if mode != "ours" {
						runs = append(runs, mode)
						continue
					}
					for _, name := range cfg.stores {
						if cfg.leases != "on" {
							runs = append(runs, "ours/"+name)
						}
						if cfg.leases != "off" {
							runs = append(runs, "ours/"+name+"+lease")
						}
					}
				}
				for _, run := range runs {
					mode, storeName, _ := strings.Cut(run, "/")
					if ctx.Err() != nil {
						return ctx.Err()
					}
					if mode == "baseline" && ai > 0 {
						continue // the baseline counts fixed windows only: once is enough
					}
					var decide func(context.Context, int) error
					var watch *redisWatch
					label := mode
					switch mode {
					case "ours":
						e := enforcers[storeName]
						base, leased := strings.CutSuffix(storeName, "+lease")
						label = storeLabel[base]
						watch = watches[base]
						if leased {
							label += "+lease"
						}
						decide = func(ctx context.Context, i int) error {
							_, err := e.Check(ctx, callFor(shape, i, cfg.keys))
							return err
						}
					case "baseline":
						decide = func(ctx context.Context, i int) error {
							return base.decide(ctx, callFor(shape, i, cfg.keys))
						}
					case "spin":
						// No Enforcer: a busy loop of about a leased
						// decision's CPU (3 µs), so its max is what the Go
						// scheduler alone makes a call wait at n
						// goroutines that never block.
						decide = func(context.Context, int) error {
							spinSink.Add(spin(3 * time.Microsecond))
							return nil
						}
					default:
						return fmt.Errorf("-modes: unknown %q", mode)
					}
					r := measure(ctx, n, cfg.duration, decide, watch)
					if *cpu {
						cpuRows = append(cpuRows, cpuRow{alg: alg, label: label, shape: shape, gor: n,
							decisions: r.decisions, proc: r.cpu, masters: r.masters, err: r.mastersErr})
					}
					results[fmt.Sprintf("%s/%s/%s/%d", alg, label, shape, n)] = r
					fmt.Printf("%-14s %-14s %-7s %5d %12.0f %10s %10s %10s %10s %8d\n", alg, label, shape, n, r.rate,
						r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond), r.schedMax.Round(time.Microsecond), r.errors)
				}
			}
		}
	}
	fmt.Println()
	fixed := cfg.algorithms[0]
	for _, alg := range cfg.algorithms {
		for _, shape := range cfg.shapes {
			for _, n := range cfg.concurrency {
				o, ok1 := results[fmt.Sprintf("%s/ours/%s/%d", alg, shape, n)]
				b, ok2 := results[fmt.Sprintf("%s/baseline/%s/%d", fixed, shape, n)]
				if ok1 && ok2 && b.rate > 0 {
					fmt.Printf("ratio %s ours/baseline, %s keys, %d goroutines: %.1fx\n", alg, shape, n, o.rate/b.rate)
				}
				for _, label := range []string{"redis", "redis-cl"} {
					if r, ok := results[fmt.Sprintf("%s/%s/%s/%d", alg, label, shape, n)]; ok && ok1 && o.rate > 0 {
						fmt.Printf("ratio %s %s/ours (PostgreSQL), %s keys, %d goroutines: %.1fx\n", alg, label, shape, n, r.rate/o.rate)
					}
				}
				for _, label := range []string{"ours", "redis", "redis-cl"} {
					l, ok := results[fmt.Sprintf("%s/%s+lease/%s/%d", alg, label, shape, n)]
					w, okw := results[fmt.Sprintf("%s/%s/%s/%d", alg, label, shape, n)]
					if ok && okw && w.rate > 0 {
						fmt.Printf("ratio %s %s+lease/%s, %s keys, %d goroutines: %.1fx\n", alg, label, label, shape, n, l.rate/w.rate)
					}
				}
				f, ok3 := results[fmt.Sprintf("%s/ours/%s/%d", fixed, shape, n)]
				if alg != fixed && ok1 && ok3 && f.rate > 0 {
					fmt.Printf("ratio %s/%s, %s keys, %d goroutines: %.2fx\n", alg, fixed, shape, n, o.rate/f.rate)
				}
			}
		}
	}
	if *cpu {
		printCPUTable(cpuRows)
	}
	return nil
}

// useAlgorithm switches the load's definitions to alg (their bursts, for
// the token bucket, default to their limits) and waits for enf to see it.
func useAlgorithm(ctx context.Context, pool *pgxpool.Pool, enf *enforce.Enforcer, alg string) error {
	if _, err := pool.Exec(ctx, `update rl_definitions set algorithm = $1 where name in ('load-callers', 'load-servers')`, alg); err != nil {
		return fmt.Errorf("switch the load's definitions to %s: %w", alg, err)
	}
	return enf.Refresh(ctx)
}

// callFor returns the i-th call of a run: spread over keys distinct callers
// and targets, or always the same caller and target (hot).
func callFor(shape string, i, keys int) enforce.Call {
	k := i % keys
	if shape == "hot" {
		k = 0
	}
	return enforce.Call{Username: "load-user-" + strconv.Itoa(k), TargetType: ratelimit.EntityMCPServer,
		TargetName: "load-server-" + strconv.Itoa(k)}
}

type result struct {
	rate          float64
	p50, p99, max time.Duration
	errors        int64
	// schedMax is the longest a runnable goroutine of this process
	// waited for a CPU during the run (the Go runtime's
	// /sched/latencies:seconds, the lower bound of its highest bucket):
	// a decision whose goroutine was preempted mid-call waits that long
	// without the Enforcer waiting on anything, so a max near it is the
	// scheduler's, not the decision path's (docs/performance.md, leases).
	schedMax time.Duration
	// decisions is how many were made; cpu is this process's CPU over
	// them (every thread, the load's goroutines included).
	decisions int
	cpu       time.Duration
	// masters is what each master of the row's Redis store did during
	// the row (measure's watch; nil without one), mastersErr why it
	// could not be read.
	masters    []serverDelta
	mastersErr error
}

// spinSink keeps spin's work from being optimised away.
var spinSink atomic.Int64

// spin burns about d of CPU without blocking or allocating.
func spin(d time.Duration) int64 {
	var x int64
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := range int64(64) {
			x += i * i
		}
	}
	return x
}

// schedLatencies reads the runtime's histogram of how long runnable
// goroutines waited to run.
func schedLatencies() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// longestWait is the lower bound of the highest bucket that gained counts
// from before to after.
func longestWait(before, after *metrics.Float64Histogram) time.Duration {
	if before == nil || after == nil || len(before.Counts) != len(after.Counts) {
		return 0
	}
	for i := len(after.Counts) - 1; i >= 0; i-- {
		if after.Counts[i] > before.Counts[i] {
			return time.Duration(after.Buckets[i] * float64(time.Second))
		}
	}
	return 0
}

// measure runs decide from n goroutines for d and reports throughput and
// latency percentiles over every decision, this process's CPU over them
// and, with a watch, what each of its Redis masters did meanwhile.
func measure(ctx context.Context, n int, d time.Duration, decide func(context.Context, int) error, watch *redisWatch) result {
	var servers0 []serverInfo
	var serversErr error
	if watch != nil {
		servers0, serversErr = watch.sample(ctx)
	}
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		mu      sync.Mutex
		lat     []time.Duration
		errs    atomic.Int64
		counter atomic.Int64
		wg      sync.WaitGroup
	)
	sched0 := schedLatencies()
	cpu0 := cputime.Process()
	start := time.Now()
	for g := range n {
		wg.Go(func() {
			local := make([]time.Duration, 0, 4096)
			for runCtx.Err() == nil {
				i := int(counter.Add(1)) + g
				t0 := time.Now()
				if err := decide(context.Background(), i); err != nil {
					errs.Add(1)
				}
				local = append(local, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Read before sorting the latencies: the sort is the load program's
	// bookkeeping, not a decision's cost.
	r := result{errors: errs.Load(), schedMax: longestWait(sched0, schedLatencies()), decisions: len(lat), cpu: cputime.Process() - cpu0}
	if watch != nil && serversErr == nil {
		var servers1 []serverInfo
		if servers1, serversErr = watch.sample(ctx); serversErr == nil {
			r.masters = delta(servers0, servers1)
		}
	}
	r.mastersErr = serversErr
	slices.Sort(lat)
	if len(lat) > 0 {
		r.rate = float64(len(lat)) / elapsed.Seconds()
		r.p50 = lat[len(lat)/2]
		r.p99 = lat[len(lat)*99/100]
		r.max = lat[len(lat)-1]
	}
	return r
}

// seed writes three gates for every call: a caller group (per caller), a
// caller_target group (per caller and target) and a server group listing
// every target (per target), all with limits no run reaches, so every
// decision takes the full allowed path: lock, check, write.
func seed(ctx context.Context, pool *pgxpool.Pool, keys int) error {
	const high = 1_000_000_000
	_, err := pool.Exec(ctx, `
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, user_max_requests, agent_max_requests, mode, updated_by)
		values ('caller:group:load-callers:3600', 'caller', 'group', 'load-callers', 3600, $1, $1, 'enforce', 'load'),
		       ('caller_target:group:load-callers:3600', 'caller_target', 'group', 'load-callers', 3600, $1, $1, 'enforce', 'load')
		on conflict (id) do nothing`, high)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `
		insert into rl_definitions (id, axis, entity_type, name, window_seconds, max_requests, members, mode, updated_by)
		values ('target:server_group:load-servers:3600', 'target', 'server_group', 'load-servers', 3600, $1,
		        (select array_agg('load-server-' || i) from generate_series(0, $2 - 1) i), 'enforce', 'load')
		on conflict (id) do update set members = excluded.members`, high, keys)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `
		insert into rl_memberships (subject_type, subject, groups)
		select 'user', 'load-user-' || i, '{load-callers}' from generate_series(0, $1 - 1) i
		on conflict do nothing`, keys)
	return err
}
