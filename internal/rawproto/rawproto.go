// Package rawproto sends gRPC requests as raw protobuf bytes, for tests of
// what a Go client's codec would refuse to send (strings that are not
// valid UTF-8) but other clients, such as Envoy's, may.
package rawproto

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// Codec sends a request given as []byte as it is and decodes answers as
// protobuf: grpc.ForceCodecV2(rawproto.Codec{}) on a call.
type Codec struct{}

// Name is the protobuf codec's, so that servers decode as usual.
func (Codec) Name() string { return proto.Name }

// Marshal sends v, a []byte, as it is.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

// Unmarshal is the protobuf codec's.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(proto.Name).Unmarshal(data, v)
}

// RateLimitRequest encodes an Envoy RateLimitRequest of one domain and one
// descriptor of one entry, whatever their bytes.
func RateLimitRequest(domain, key, value string) []byte {
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
	}
	entry := str(str(nil, 1, key), 2, value)
	descriptor := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), entry)
	return protowire.AppendBytes(protowire.AppendTag(str(nil, 1, domain), 2, protowire.BytesType), descriptor)
}
