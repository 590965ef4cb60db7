// Command rlenvoy-load measures Envoy's rate-limit protocol against the
// HTTP decision endpoint in one run: ShouldRateLimit with three
// descriptors per request (three descriptor gates) and POST /api/check
// with three gates (caller, caller_target and target definitions), each
// through its real listener of one in-process rlapi over PostgreSQL, at
// each concurrency (1 and 64 by default: goroutines, which for gRPC are
// concurrent streams on one connection). It prints decisions/s, p50 and
// p99 for each, and the ratio gRPC / HTTP (docs/performance.md).
//
//	go run ./cmd/rlenvoy-load -dsn "$DATABASE_URL" -duration 10s
//
// It needs a database it may fill: it applies the migrations and writes
// its own definitions, memberships and tokens (prefix "load-").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/migrate"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/envoyrls"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rlenvoy-load:", err)
		os.Exit(1)
	}
}

func run() error {
	dsn := flag.String("dsn", os.Getenv("DATABASE_URL"), "PostgreSQL URL (DATABASE_URL)")
	duration := flag.Duration("duration", 10*time.Second, "length of each run")
	keys := flag.Int("keys", 10000, "distinct callers (HTTP) and descriptor values (gRPC)")
	conc := flag.String("concurrency", "1,64", "goroutines (gRPC: streams) per run, comma-separated")
	grpcConns := flag.Int("grpc-conns", 1, "gRPC connections the streams are spread over (Envoy opens one per worker thread)")
	direct := flag.Bool("direct", false, "also decide both calls on the Enforcer directly (no protocol), to tell the protocol's cost from the gates'")
	timeout := flag.Duration("backend-timeout", 5*time.Second, "enforce.Options.BackendTimeout (rlapi's default is 250ms)")
	rounds := flag.Int("rounds", 4, "alternations of the two paths per concurrency (each runs -duration in all)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the runs to this file")
	countMode := flag.String("count-mode", string(envoyrls.CountAllOrNothing), "the gRPC service's count mode: all-or-nothing or every-descriptor (rlapi --grpc-count-mode)")
	flag.Parse()
	mode, err := envoyrls.ParseCountMode(*countMode)
	if err != nil {
		return fmt.Errorf("-count-mode: %w", err)
	}
	if *dsn == "" {
		return errors.New("no database: set -dsn or DATABASE_URL")
	}
	if *rounds < 1 {
		return errors.New("-rounds: at least 1")
	}
	var concurrency []int
	for _, c := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || n < 1 || n > 1024 {
			return fmt.Errorf("-concurrency: %q is not a count between 1 and 1024", c)
		}
		concurrency = append(concurrency, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	st, err := store.Open(ctx, *dsn, store.Opts{ApplicationName: "rlenvoy-load"})
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := migrate.Up(ctx, st.Pool()); err != nil {
		return err
	}
	decisions, err := store.Open(ctx, *dsn, store.Opts{MaxConns: 12, ApplicationName: "rlenvoy-load-decisions"})
	if err != nil {
		return err
	}
	defer decisions.Close()
	if err := seed(ctx, st); err != nil {
		return err
	}
	secret, sum := token.New()
	name := fmt.Sprintf("load-envoy-%d", time.Now().UnixNano())
	if _, err := st.CreateToken(ctx, name, ratelimit.RoleEnforcer, sum, nil); err != nil {
		return err
	}
	if *targetsFlag != "" {
		ts, err := parseTargets(*targetsFlag)
		if err != nil {
			return err
		}
		return runTargets(ctx, ts, secret, concurrency, *duration, *rounds, *keys, *grpcConns)
	}

	// A generous backend timeout: the load measures decisions, not the
	// fail-open answers a busy machine's timeouts would give instead.
	enf, err := postgres.New(ctx, decisions.Pool(), enforce.Options{SweepInterval: -1, BackendTimeout: *timeout})
	if err != nil {
		return err
	}
	defer enf.Close()
	log := slog.New(slog.DiscardHandler)
	srv := api.New(st, api.Config{BackendTimeout: *timeout}, api.Opts{Logger: log, Enforcer: enf, AuthStore: decisions,
		Counters: postgres.NewCounterStore(decisions.Pool()), CounterAdmin: postgres.NewCounterStore(decisions.Pool())})
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = srv.Serve(sctx, httpLn) }()

	svc, err := envoyrls.New(envoyrls.Options{Enforcer: enf, CountMode: mode, Authenticate: func(ctx context.Context, tok string, peer netip.Addr) error {
		return srv.VerifyDecisionToken(ctx, tok, peer)
	}})
	if err != nil {
		return err
	}
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	gs := grpc.NewServer()
	svc.Register(gs)
	go func() { _ = gs.Serve(grpcLn) }()
	defer gs.Stop()

	hc, err := client.New("http://"+httpLn.Addr().String(), client.Options{Token: secret, Retries: -1,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}})
	if err != nil {
		return err
	}
	var clients []rlsv3.RateLimitServiceClient
	for range max(*grpcConns, 1) {
		conn, err := grpc.NewClient(grpcLn.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer conn.Close()
		clients = append(clients, rlsv3.NewRateLimitServiceClient(conn))
	}
	gctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+secret)

	httpCall := func(i int) error {
		ip := fmt.Sprintf("10.0.%d.%d", (i%*keys)/256%256, (i%*keys)%256)
		res, err := hc.Check(ctx, client.CheckRequest{ClientIP: ip, TargetType: ratelimit.EntityMCPServer, TargetName: "load-srv"})
		if err == nil && !res.Allowed {
			err = fmt.Errorf("check denied: %s", res.Reason)
		}
		return err
	}
	grpcCall := func(i int) error {
		k := strconv.Itoa(i % *keys)
		resp, err := clients[i%len(clients)].ShouldRateLimit(gctx, &rlsv3.RateLimitRequest{Domain: "load", Descriptors: []*ratelimitv3.RateLimitDescriptor{
			entries("route", "checkout", "tenant", "t"+k), entries("api_key", "k"+k), entries("zone", "/files/x")}})
		if err == nil && resp.OverallCode != rlsv3.RateLimitResponse_OK {
			err = fmt.Errorf("ShouldRateLimit: %s", resp.OverallCode)
		}
		return err
	}
	directHTTP := func(i int) error {
		ip := fmt.Sprintf("10.0.%d.%d", (i%*keys)/256%256, (i%*keys)%256)
		d, err := enf.Check(ctx, enforce.Call{ClientIP: ip, TargetType: ratelimit.EntityMCPServer, TargetName: "load-srv"})
		if err == nil && (!d.Allowed || len(d.Gates) != 3) {
			err = fmt.Errorf("direct check: %s with %d gates", d.Reason, len(d.Gates))
		}
		return err
	}
	directGRPC := func(i int) error {
		k := strconv.Itoa(i % *keys)
		d, err := enf.Check(ctx, enforce.Call{Cost: 1, Descriptors: &enforce.DescriptorRequest{Domain: "load", Descriptors: []enforce.Descriptor{
			{Entries: []ratelimit.DescriptorEntry{{Key: "route", Value: "checkout"}, {Key: "tenant", Value: "t" + k}}},
			{Entries: []ratelimit.DescriptorEntry{{Key: "api_key", Value: "k" + k}}},
			{Entries: []ratelimit.DescriptorEntry{{Key: "zone", Value: "/files/x"}}}}}})
		if err == nil && (!d.Allowed || len(d.Gates) != 3) {
			err = fmt.Errorf("direct descriptors: %s with %d gates", d.Reason, len(d.Gates))
		}
		return err
	}
	// Warm both paths (connections, caches).
	for i := range 200 {
		if err := httpCall(i); err != nil {
			return err
		}
		if err := grpcCall(i); err != nil {
			return err
		}
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	host, _ := os.Hostname()
	fmt.Printf("rlenvoy-load: %d cores (GOMAXPROCS %d), %s per path and concurrency in %d rounds, %d keys, %d gRPC connections, count mode %s, host %s, %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), *duration, *rounds, *keys, len(clients), mode, host, time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("%-34s %5s %12s %9s %9s\n", "path", "conc", "decisions/s", "p50", "p99")
	for _, c := range concurrency {
		// The two paths alternate, in both orders, so that neither is
		// favoured by what the shared database was doing at the time.
		var h, g, dh, dg sample
		for r := range *rounds {
			order := []bool{true, false}
			if r%2 == 1 {
				order = []bool{false, true}
			}
			if *direct {
				// In both orders too.
				for _, isHTTP := range order {
					if isHTTP {
						if err := dh.run(ctx, c, *duration/time.Duration(*rounds), directHTTP); err != nil {
							return err
						}
					} else if err := dg.run(ctx, c, *duration/time.Duration(*rounds), directGRPC); err != nil {
						return err
					}
				}
			}
			for _, isHTTP := range order {
				if isHTTP {
					if err := h.run(ctx, c, *duration/time.Duration(*rounds), httpCall); err != nil {
						return fmt.Errorf("POST /api/check: %w", err)
					}
				} else if err := g.run(ctx, c, *duration/time.Duration(*rounds), grpcCall); err != nil {
					return fmt.Errorf("ShouldRateLimit: %w", err)
				}
			}
		}
		hr, gr := h.result(), g.result()
		fmt.Printf("%-34s %5d %12.0f %9s %9s\n", "POST /api/check (3 gates)", c, hr.rate, hr.p50, hr.p99)
		fmt.Printf("%-34s %5d %12.0f %9s %9s\n", "ShouldRateLimit (3 descriptors)", c, gr.rate, gr.p50, gr.p99)
		fmt.Printf("%-34s %5d %11.2fx\n", "ratio gRPC / HTTP", c, gr.rate/hr.rate)
		if *direct {
			dhr, dgr := dh.result(), dg.result()
			fmt.Printf("%-34s %5d %12.0f %9s %9s\n", "Enforcer.Check, the 3 HTTP gates", c, dhr.rate, dhr.p50, dhr.p99)
			fmt.Printf("%-34s %5d %12.0f %9s %9s\n", "Enforcer.Check, the 3 descriptors", c, dgr.rate, dgr.p50, dgr.p99)
		}
	}
	return nil
}

func entries(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// seed writes the load's definitions: three gates per HTTP call (the
// caller group of the calls' network, its caller_target and the target) and three descriptor
// definitions, all with limits no run reaches.
func seed(ctx context.Context, st *store.Store) error {
	big := 1_000_000_000
	defs := []ratelimit.Definition{
		{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "load-users", WindowSeconds: 3600, UserMaxRequests: &big, Enabled: true},
		{Axis: ratelimit.AxisCallerTarget, EntityType: ratelimit.EntityGroup, Name: "load-users", WindowSeconds: 3600, UserMaxRequests: &big, Enabled: true},
		{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "load-srv", WindowSeconds: 3600, MaxRequests: &big, Enabled: true},
	}
	for _, path := range [][]ratelimit.DescriptorEntry{
		{{Key: "route", Value: "checkout"}, {Key: "tenant"}},
		{{Key: "api_key"}},
		{{Key: "zone", Value: "/files/*"}},
	} {
		d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 3600, MaxRequests: &big, Enabled: true}
		d.Domain, d.Descriptor = "load", path
		d.Name = ratelimit.DescriptorName("load", path)
		defs = append(defs, d)
	}
	for _, d := range defs {
		d.ID = d.Key()
		if _, err := st.PutDefinition(ctx, d, store.Write{Actor: "rlenvoy-load"}); err != nil {
			return fmt.Errorf("seed %s: %w", d.Key(), err)
		}
	}
	// The HTTP calls are anonymous, from 10.0.0.0/16: each address is a
	// caller ip:<address> limited through its network's group.
	m := ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/16", Groups: []string{"load-users"}}
	if _, err := st.PutMembership(ctx, m, store.Write{Actor: "rlenvoy-load"}); err != nil {
		return fmt.Errorf("seed %s: %w", m.Key(), err)
	}
	return nil
}

type result struct {
	rate     float64
	p50, p99 time.Duration
}

// sample accumulates the runs of one path.
type sample struct {
	lat     []time.Duration
	elapsed time.Duration
}

func (s *sample) result() result {
	slices.Sort(s.lat)
	if len(s.lat) == 0 {
		return result{}
	}
	pct := func(p float64) time.Duration { return s.lat[int(p*float64(len(s.lat)-1))].Round(time.Microsecond) }
	return result{rate: float64(len(s.lat)) / s.elapsed.Seconds(), p50: pct(0.50), p99: pct(0.99)}
}

// run runs fn from conc goroutines for d.
func (s *sample) run(ctx context.Context, conc int, d time.Duration, fn func(i int) error) error {
	var (
		next   atomic.Int64
		failed atomic.Pointer[error]
		mu     sync.Mutex
		wg     sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for range conc {
		wg.Go(func() {
			own := make([]time.Duration, 0, 4096)
			for time.Now().Before(end) && ctx.Err() == nil && failed.Load() == nil {
				i := int(next.Add(1))
				t0 := time.Now()
				if err := fn(i); err != nil {
					failed.Store(&err)
					return
				}
				own = append(own, time.Since(t0))
			}
			mu.Lock()
			s.lat = append(s.lat, own...)
			mu.Unlock()
		})
	}
	wg.Wait()
	s.elapsed += time.Since(start)
	if p := failed.Load(); p != nil {
		return *p
	}
	return nil
}
