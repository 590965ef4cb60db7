package envoyrls

import (
	"fmt"
	"unicode/utf8"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
)

// A rate-limit request whose domain or descriptor entry is not valid UTF-8
// (protobuf strings are UTF-8, and the protobuf decoder refuses anything
// else) is the caller's error. grpc-go answers a message its codec cannot
// decode with Internal, whatever the codec's error says: rpc_util.go's recv
// wraps it in a status of its own, and the server stream writes that status
// to the client before the method handler returns. So Codec does not fail
// on such a request: it decodes it as an empty request marked with the
// field at fault (undecodableField), and ShouldRateLimit answers the mark
// InvalidArgument naming the field. Without Codec, grpc-go's Internal
// stands.

// undecodableField is the field number Codec marks an undecodable request
// with (in its unknown fields; the largest number protobuf allows, which
// no version of the API will use): its value names the field at fault. A
// caller that sends it itself is answered InvalidArgument, as it would be
// for the field it names.
const undecodableField = protowire.MaxValidNumber

// Codec is grpc-go's protobuf codec, but for a rate-limit request that is
// not valid UTF-8: that one is answered InvalidArgument naming the field
// (domain, or descriptors[i].entries[j].key or .value) rather than
// grpc-go's Internal. Serve the service with
// grpc.ForceServerCodecV2(envoyrls.Codec{}) for that (rlapi does); every
// other message is the protobuf codec's.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

func protoCodec() encoding.CodecV2 { return encoding.GetCodecV2(proto.Name) }

// Name is the protobuf codec's.
func (Codec) Name() string { return proto.Name }

// Marshal is the protobuf codec's.
func (Codec) Marshal(v any) (mem.BufferSlice, error) { return protoCodec().Marshal(v) }

// Unmarshal is the protobuf codec's, but for a rate-limit request that is
// not valid UTF-8: decoded as an empty request marked with the field.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := protoCodec().Unmarshal(data, v)
	if err == nil {
		return nil
	}
	if req, ok := v.(*rlsv3.RateLimitRequest); ok {
		if f := notUTF8(data.Materialize()); f != "" {
			req.Reset()
			req.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, undecodableField, protowire.BytesType), f))
			return nil
		}
	}
	return err
}

// undecodable is the field Codec marked req with, "" for none.
func undecodable(req *rlsv3.RateLimitRequest) string {
	if req == nil || len(req.ProtoReflect().GetUnknown()) == 0 {
		return ""
	}
	var f string
	eachBytes(req.ProtoReflect().GetUnknown(), func(num protowire.Number, v []byte) string {
		if num == undecodableField {
			// Codec's names are short; a caller's own mark is not echoed
			// back at any length.
			f = "a string field"
			if len(v) > 0 && len(v) <= 64 {
				f = string(v)
			}
			return f
		}
		return ""
	})
	return f
}

// notUTF8 names the first string field of an encoded RateLimitRequest that
// is not valid UTF-8 ("" for none, or for bytes it cannot read).
func notUTF8(b []byte) string {
	descriptor := 0
	return eachBytes(b, func(num protowire.Number, v []byte) string {
		switch num {
		case 1: // domain
			if !utf8.Valid(v) {
				return "domain"
			}
		case 2: // descriptors
			i := descriptor
			descriptor++
			entry := 0
			return eachBytes(v, func(num protowire.Number, v []byte) string {
				if num != 1 { // entries
					return ""
				}
				j := entry
				entry++
				return eachBytes(v, func(num protowire.Number, v []byte) string {
					if (num == 1 || num == 2) && !utf8.Valid(v) {
						return fmt.Sprintf("descriptors[%d].entries[%d].%s", i, j, [...]string{1: "key", 2: "value"}[num])
					}
					return ""
				})
			})
		}
		return ""
	})
}

// eachBytes calls f with each length-delimited field of the message b, in
// order, until f names something.
func eachBytes(b []byte, f func(protowire.Number, []byte) string) string {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return ""
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return ""
		}
		b = b[n:]
		if name := f(num, v); name != "" {
			return name
		}
	}
	return ""
}
