package main

import (
	"strings"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/rawproto"
)

// TestGRPCInvalidUTF8: on rlapi's listener a descriptor value that is not
// valid UTF-8 is InvalidArgument naming the field, not grpc-go's Internal.
func TestGRPCInvalidUTF8(t *testing.T) {
	t.Parallel()
	vars := env(map[string]string{"DATABASE_URL": pgtest.NewMigratedDatabase(t)})
	grpcAddr := freeAddr(t)
	startServe(t, vars, "--grpc-addr", grpcAddr, "--grpc-trusted-clients", "127.0.0.0/8")
	err := dialGRPC(t, grpcAddr).Invoke(t.Context(), rlsv3.RateLimitService_ShouldRateLimit_FullMethodName,
		rawproto.RateLimitRequest("edge", "user", "al\xffce"),
		&rlsv3.RateLimitResponse{}, grpc.ForceCodecV2(rawproto.Codec{}))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "descriptors[0].entries[0].value: must be valid UTF-8") {
		t.Errorf("invalid UTF-8 value: %v, want InvalidArgument naming descriptors[0].entries[0].value", err)
	}
}
