package envoyrls_test

import (
	"strings"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/rlctl/rlctl/internal/rawproto"
	"github.com/rlctl/rlctl/pkg/envoyrls"
)

// TestInvalidUTF8IsInvalidArgument: a domain, key or value that is not
// valid UTF-8 is InvalidArgument naming the field on a server with
// envoyrls.Codec (rlapi's); without it grpc-go answers Internal, which no
// handler can change (the documented limit); a valid request still
// decides on both.
func TestInvalidUTF8IsInvalidArgument(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.define(t, desc("rl", 60, 5, "k", ""))
	opts := envoyrls.Options{Enforcer: h.enf}
	withCodec, without := serve(t, opts, grpc.ForceServerCodecV2(envoyrls.Codec{})), serve(t, opts)
	ask := func(conn *grpc.ClientConn, req []byte) (*rlsv3.RateLimitResponse, error) {
		resp := &rlsv3.RateLimitResponse{}
		err := conn.Invoke(t.Context(), rlsv3.RateLimitService_ShouldRateLimit_FullMethodName, req, resp, grpc.ForceCodecV2(rawproto.Codec{}))
		return resp, err
	}
	for _, tt := range []struct {
		name, domain, key, value, field string
	}{
		{"domain", "r\xffl", "k", "v", "domain"},
		{"key", "rl", "k\xc3", "v", "descriptors[0].entries[0].key"},
		{"value", "rl", "k", "\xffv", "descriptors[0].entries[0].value"},
	} {
		_, err := ask(withCodec, rawproto.RateLimitRequest(tt.domain, tt.key, tt.value))
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tt.field+": must be valid UTF-8") {
			t.Errorf("%s with the codec: %v, want InvalidArgument naming %s", tt.name, err, tt.field)
		}
		_, err = ask(without, rawproto.RateLimitRequest(tt.domain, tt.key, tt.value))
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "invalid UTF-8") {
			t.Errorf("%s without the codec: %v, want grpc-go's Internal saying invalid UTF-8", tt.name, err)
		}
	}
	for _, conn := range []*grpc.ClientConn{withCodec, without} {
		r, err := ask(conn, rawproto.RateLimitRequest("rl", "k", "v"))
		if err != nil || answer(r) != "OK | OK 5/MINUTE 4" && answer(r) != "OK | OK 5/MINUTE 3" {
			t.Errorf("valid request: %v %v, want OK", r, err)
		}
	}
}
