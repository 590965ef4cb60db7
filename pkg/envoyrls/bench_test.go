package envoyrls_test

// Benchmarks of the two decision protocols side by side, each through its
// real listener over one rlapi, one Enforcer and real PostgreSQL:
// ShouldRateLimit with three descriptors (three descriptor gates) and
// POST /api/check with three gates (caller, caller_target and target
// definitions), both with an enforcer token verified per request. The
// Enforcer-only pair (no protocol) tells the protocol's cost from the
// gates'. docs/performance.md records them.
//
//	go test ./pkg/envoyrls -run '^$' -bench . -benchmem -count 6

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/envoyrls"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

const benchKeys = 1000

type benchEnv struct {
	enf  *enforce.Enforcer
	http *client.Client
	rls  rlsv3.RateLimitServiceClient
	gctx context.Context
}

func newBenchEnv(b *testing.B, counters enforce.CounterStore) *benchEnv {
	b.Helper()
	ctx := context.Background()
	st := pgtest.NewStore(b)
	big := 1_000_000_000
	defs := []ratelimit.Definition{
		{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "bench-users", WindowSeconds: 3600, UserMaxRequests: &big, Enabled: true},
		{Axis: ratelimit.AxisCallerTarget, EntityType: ratelimit.EntityGroup, Name: "bench-users", WindowSeconds: 3600, UserMaxRequests: &big, Enabled: true},
		{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "bench-srv", WindowSeconds: 3600, MaxRequests: &big, Enabled: true},
	}
	for _, path := range [][]ratelimit.DescriptorEntry{
		{{Key: "route", Value: "checkout"}, {Key: "tenant"}},
		{{Key: "api_key"}},
		{{Key: "zone", Value: "/files/*"}},
	} {
		d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 3600, MaxRequests: &big, Enabled: true}
		d.Domain, d.Descriptor = "bench", path
		d.Name = ratelimit.DescriptorName("bench", path)
		defs = append(defs, d)
	}
	for _, d := range defs {
		d.ID = d.Key()
		if _, err := st.PutDefinition(ctx, d, store.Write{Actor: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	m := ratelimit.Membership{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/16", Groups: []string{"bench-users"}}
	if _, err := st.PutMembership(ctx, m, store.Write{Actor: "bench"}); err != nil {
		b.Fatal(err)
	}
	secret, sum := token.New()
	if _, err := st.CreateToken(ctx, "bench-enforcer", ratelimit.RoleEnforcer, sum, nil); err != nil {
		b.Fatal(err)
	}
	enf, err := postgres.New(ctx, st.Pool(), enforce.Options{SweepInterval: -1, BackendTimeout: 10 * time.Second, Counters: counters})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(enf.Close)
	srv := api.New(st, api.Config{BackendTimeout: 10 * time.Second}, api.Opts{Logger: slog.New(slog.DiscardHandler), Enforcer: enf, Counters: postgres.NewCounterStore(st.Pool())})
	httpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = srv.Serve(sctx, httpLn); close(done) }()
	b.Cleanup(func() { cancel(); <-done })

	svc, err := envoyrls.New(envoyrls.Options{Enforcer: enf, Authenticate: func(ctx context.Context, tok string, peer netip.Addr) error {
		return srv.VerifyDecisionToken(ctx, tok, peer)
	}})
	if err != nil {
		b.Fatal(err)
	}
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	svc.Register(gs)
	go func() { _ = gs.Serve(grpcLn) }()
	b.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(grpcLn.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	hc, err := client.New("http://"+httpLn.Addr().String(), client.Options{Token: secret, Retries: -1,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}})
	if err != nil {
		b.Fatal(err)
	}
	e := &benchEnv{enf: enf, http: hc, rls: rlsv3.NewRateLimitServiceClient(conn),
		gctx: metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+secret)}
	// Warm up: every counter row exists, tokens are cached, as in steady
	// state.
	for i := range benchKeys {
		if err := e.grpcCall(i); err != nil {
			b.Fatal(err)
		}
		if err := e.httpCall(i); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

func (e *benchEnv) httpCall(i int) error {
	k := i % benchKeys
	res, err := e.http.Check(context.Background(), client.CheckRequest{ClientIP: fmt.Sprintf("10.0.%d.%d", k/256, k%256),
		TargetType: ratelimit.EntityMCPServer, TargetName: "bench-srv"})
	if err == nil && !res.Allowed {
		err = fmt.Errorf("check denied: %s", res.Reason)
	}
	return err
}

func (e *benchEnv) grpcCall(i int) error {
	k := strconv.Itoa(i % benchKeys)
	resp, err := e.rls.ShouldRateLimit(e.gctx, &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		rd("route", "checkout", "tenant", "t"+k), rd("api_key", "k"+k), rd("zone", "/files/x")}})
	if err == nil && (resp.OverallCode != rlsv3.RateLimitResponse_OK || resp.Statuses[0].CurrentLimit == nil) {
		err = fmt.Errorf("ShouldRateLimit: %s", resp.OverallCode)
	}
	return err
}

func (e *benchEnv) directHTTP(i int) error {
	k := i % benchKeys
	d, err := e.enf.Check(context.Background(), enforce.Call{ClientIP: fmt.Sprintf("10.0.%d.%d", k/256, k%256),
		TargetType: ratelimit.EntityMCPServer, TargetName: "bench-srv"})
	if err == nil && (!d.Allowed || len(d.Gates) != 3) {
		err = fmt.Errorf("direct check: %s with %d gates", d.Reason, len(d.Gates))
	}
	return err
}

func (e *benchEnv) directDescriptors(i int) error {
	k := strconv.Itoa(i % benchKeys)
	d, err := e.enf.Check(context.Background(), enforce.Call{Cost: 1, Descriptors: &enforce.DescriptorRequest{Domain: "bench", Descriptors: []enforce.Descriptor{
		{Entries: []ratelimit.DescriptorEntry{{Key: "route", Value: "checkout"}, {Key: "tenant", Value: "t" + k}}},
		{Entries: []ratelimit.DescriptorEntry{{Key: "api_key", Value: "k" + k}}},
		{Entries: []ratelimit.DescriptorEntry{{Key: "zone", Value: "/files/x"}}}}}})
	if err == nil && (!d.Allowed || len(d.Gates) != 3) {
		err = fmt.Errorf("direct descriptors: %s with %d gates", d.Reason, len(d.Gates))
	}
	return err
}

// BenchmarkDecide runs each path from one goroutine (the latency of one
// decision) and from 64 (where decisions share round trips and the CPU
// is what runs out), counting in PostgreSQL.
func BenchmarkDecide(b *testing.B) {
	benchPaths(b, newBenchEnv(b, nil))
}

// BenchmarkDecideMemory is BenchmarkDecide counting in memory
// (pkg/enforce/memory): without the database's round trip, what is left
// is what the protocols and the Enforcer cost, which a shared machine
// measures far more steadily.
func BenchmarkDecideMemory(b *testing.B) {
	benchPaths(b, newBenchEnv(b, memory.New()))
}

func benchPaths(b *testing.B, e *benchEnv) {
	paths := []struct {
		name string
		fn   func(int) error
	}{
		{"HTTPCheck3Gates", e.httpCall},
		{"ShouldRateLimit3Descriptors", e.grpcCall},
		{"EnforcerCheck3Gates", e.directHTTP},
		{"EnforcerCheck3Descriptors", e.directDescriptors},
	}
	for _, p := range paths {
		b.Run(p.name+"/conc=1", func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			i := 0
			for b.Loop() {
				if err := p.fn(i); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(p.name+"/conc=64", func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			var n atomic.Int64
			b.SetParallelism(32) // 64 goroutines on 2 CPUs
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := p.fn(int(n.Add(1))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

// reportCPU reports the CPU time this process (client and server: both
// are in it, the database is not) spent per decision: on a shared machine
// it is steadier than the wall time, which waits on the database and on
// the neighbours.
func reportCPU(b *testing.B) func() {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	return func() {
		b.ReportMetric(float64((cpu()-start).Microseconds())/float64(b.N), "cpu-µs/op")
	}
}
