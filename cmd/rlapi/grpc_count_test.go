package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestGRPCCountModeFlag: --grpc-count-mode every-descriptor (or
// RLAPI_GRPC_COUNT_MODE) counts a descriptor another denies, as Envoy's
// service does; an unknown mode is a usage error naming the flag.
func TestGRPCCountModeFlag(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"serve", "--grpc-addr", "127.0.0.1:0", "--grpc-count-mode", "sometimes"},
		env(map[string]string{"DATABASE_URL": "postgres://x"}), &out, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "--grpc-count-mode") || !strings.Contains(errOut.String(), "every-descriptor") {
		t.Errorf("--grpc-count-mode sometimes: exit %d, stderr %q; want 2 naming the flag and its values", code, errOut.String())
	}

	dsn := pgtest.NewMigratedDatabase(t)
	vars := env(map[string]string{"DATABASE_URL": dsn, "RLAPI_GRPC_COUNT_MODE": "every-descriptor"})
	adminTok := createToken(t, vars, "admin", "admin")
	grpcAddr := freeAddr(t)
	httpAddr, _ := startServe(t, vars, "--grpc-addr", grpcAddr, "--grpc-trusted-clients", "127.0.0.0/8", "--backend-timeout", "1m")
	admin, err := client.New("http://"+httpAddr, client.Options{Token: adminTok})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		key   string
		limit int
	}{{"a", 1}, {"b", 10}} {
		def := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityDescriptor, WindowSeconds: 86400,
			MaxRequests: new(d.limit), Enabled: true, DescriptorFields: ratelimit.DescriptorFields{Domain: "edge",
				Descriptor: []ratelimit.DescriptorEntry{{Key: d.key}}}}
		if _, err := admin.PutDefinition(t.Context(), def, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rls := rlsv3.NewRateLimitServiceClient(dialGRPC(t, grpcAddr))
	ask := func(key, value string) *rlsv3.RateLimitResponse {
		t.Helper()
		resp, err := rls.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{
			{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: key, Value: value}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// Wait until the server knows both definitions (change notices), on
	// values of their own.
	deadline := time.Now().Add(20 * time.Second)
	for ask("a", "probe").Statuses[0].CurrentLimit == nil || ask("b", "probe").Statuses[0].CurrentLimit == nil {
		if time.Now().After(deadline) {
			t.Fatal("the server never knew the definitions")
		}
		time.Sleep(20 * time.Millisecond)
	}
	both := &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "a", Value: "1"}}},
		{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "b", Value: "1"}}}}}
	for i, want := range []uint32{9, 8} {
		resp, err := rls.ShouldRateLimit(t.Context(), both)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Statuses[1].LimitRemaining != want {
			t.Errorf("request %d (%s): b's remaining %d, want %d: every descriptor counted", i+1, resp.OverallCode, resp.Statuses[1].LimitRemaining, want)
		}
	}
}
