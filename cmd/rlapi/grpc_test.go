package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func createToken(t *testing.T, vars func(string) string, name, role string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"token", "create", "--name", name, "--role", role}, vars, &out, &errOut); code != 0 {
		t.Fatalf("token create exit %d: %s", code, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

func dialGRPC(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestGRPCExactAcrossReplicas: two rlapi replicas on one database serve
// ShouldRateLimit on --grpc-addr; concurrent requests split across them
// are admitted exactly up to the limit, with an enforcer token; health
// and reflection answer; a call without a token is Unauthenticated.
func TestGRPCExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	vars := env(map[string]string{"DATABASE_URL": dsn})
	adminTok := createToken(t, vars, "admin", "admin")
	enforcerTok := createToken(t, vars, "envoy", "enforcer")
	viewerTok := createToken(t, vars, "viewer", "viewer")

	grpcAddrs := []string{freeAddr(t), freeAddr(t)}
	// A backend timeout no loaded test machine reaches: a decision the
	// fail-open policy answered would count nothing.
	httpAddr, _ := startServe(t, vars, "--grpc-addr", grpcAddrs[0], "--backend-timeout", "1m")
	startServe(t, vars, "--grpc-addr", grpcAddrs[1], "--backend-timeout", "1m")

	admin, err := client.New("http://"+httpAddr, client.Options{Token: adminTok})
	if err != nil {
		t.Fatal(err)
	}
	const limit = 25
	d := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 86400,
		MaxRequests: new(limit), Enabled: true, DescriptorFields: ratelimit.DescriptorFields{Domain: "edge",
			Descriptor: []ratelimit.DescriptorEntry{{Key: "generic_key", Value: "checkout"}}}}
	if _, err := admin.PutDefinition(t.Context(), d, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}

	conns := []*grpc.ClientConn{dialGRPC(t, grpcAddrs[0]), dialGRPC(t, grpcAddrs[1])}
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "generic_key", Value: "checkout"}}}}}
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+enforcerTok)

	// Both replicas see the definition (change notices): wait until each
	// limits, using a descriptor of its own so the counted one is untouched.
	for i, c := range conns {
		rls := rlsv3.NewRateLimitServiceClient(c)
		deadline := time.Now().Add(20 * time.Second)
		for {
			probe := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
				Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "generic_key", Value: "checkout"}},
				Limit:   &ratelimitv3.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 1000, Unit: 4}}}}
			probe.Descriptors[0].Entries[0].Value = "probe"
			resp, err := rls.ShouldRateLimit(authed, probe)
			if err == nil && resp.Statuses[0].CurrentLimit != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d never knew domain edge: %v %v", i, resp, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	start := time.Now()
	var ok, over atomic.Int64
	var wg sync.WaitGroup
	for i := range 80 {
		wg.Go(func() {
			resp, err := rlsv3.NewRateLimitServiceClient(conns[i%2]).ShouldRateLimit(authed, req)
			if err != nil {
				t.Error(err)
				return
			}
			if resp.OverallCode == rlsv3.RateLimitResponse_OK {
				ok.Add(1)
			} else {
				over.Add(1)
			}
		})
	}
	wg.Wait()
	if start.Unix()/86400 != time.Now().Unix()/86400 {
		t.Skip("the day's window turned during the test")
	}
	if ok.Load() != limit || over.Load() != 80-limit {
		t.Errorf("two replicas admitted %d of 80 (refused %d), want exactly %d", ok.Load(), over.Load(), limit)
	}

	rls := rlsv3.NewRateLimitServiceClient(conns[0])
	if _, err := rls.ShouldRateLimit(t.Context(), req); status.Code(err) != codes.Unauthenticated {
		t.Errorf("without a token: %v, want Unauthenticated", err)
	}
	viewer := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+viewerTok)
	if _, err := rls.ShouldRateLimit(viewer, req); status.Code(err) != codes.PermissionDenied {
		t.Errorf("with a viewer token: %v, want PermissionDenied", err)
	}
	hc, err := healthpb.NewHealthClient(conns[1]).Check(t.Context(), &healthpb.HealthCheckRequest{Service: "envoy.service.ratelimit.v3.RateLimitService"})
	if err != nil || hc.Status != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health: %v %v, want SERVING", hc, err)
	}
	stream, err := reflectionpb.NewServerReflectionClient(conns[0]).ServerReflectionInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	rr, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range rr.GetListServicesResponse().GetService() {
		found = found || s.GetName() == "envoy.service.ratelimit.v3.RateLimitService"
	}
	if !found {
		t.Errorf("reflection lists %v, want the rate-limit service", rr.GetListServicesResponse().GetService())
	}
}

// TestGRPCFlagsNeedTheAddress: the gRPC options without --grpc-addr, or
// half a TLS pair, are usage errors.
func TestGRPCFlagsNeedTheAddress(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--grpc-trusted-clients", "10.0.0.0/8"},
		{"--grpc-addr", "127.0.0.1:0", "--grpc-tls-cert", "x.pem"},
		{"--grpc-addr", "127.0.0.1:0", "--grpc-trusted-clients", "not-a-cidr"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"serve"}, args...), env(map[string]string{"DATABASE_URL": "postgres://x"}), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "grpc") {
			t.Errorf("serve %v: exit %d, stderr %q; want 2 naming the gRPC flag", args, code, errOut.String())
		}
	}
}

// TestGRPCBurstAfterTokenCacheExpiry: once a gateway's token has been
// verified, the expiry of its cache entry does not send the gateway's
// next burst of concurrent calls to the few admission slots of unverified
// tokens: 64 calls at once right after the TTL all get decisions, none is
// refused ResourceExhausted.
func TestGRPCBurstAfterTokenCacheExpiry(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewMigratedDatabase(t)
	vars := env(map[string]string{"DATABASE_URL": dsn})
	enforcerTok := createToken(t, vars, "envoy", "enforcer")
	grpcAddr := freeAddr(t)
	startServe(t, vars, "--grpc-addr", grpcAddr, "--backend-timeout", "1m", "--token-cache-ttl", "1s")

	rls := rlsv3.NewRateLimitServiceClient(dialGRPC(t, grpcAddr))
	req := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
		Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "generic_key", Value: "checkout"}}}}}
	authed := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+enforcerTok)
	if _, err := rls.ShouldRateLimit(authed, req); err != nil {
		t.Fatalf("the first call, which verifies the token: %v", err)
	}
	time.Sleep(1200 * time.Millisecond) // past the token cache's TTL

	const burst = 64
	var wg sync.WaitGroup
	var mu sync.Mutex
	codesSeen := map[codes.Code]int{}
	for range burst {
		wg.Go(func() {
			_, err := rls.ShouldRateLimit(authed, req)
			mu.Lock()
			codesSeen[status.Code(err)]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codesSeen[codes.OK] != burst {
		t.Errorf("%d concurrent calls after the token cache's TTL: %v, want every one answered OK", burst, codesSeen)
	}
}
