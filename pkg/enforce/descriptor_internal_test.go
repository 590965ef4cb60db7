package enforce

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce/counterkey"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestDescriptorKeyIsTheCounterKey: the key counterkey.DescriptorWithString builds in
// one buffer is byte for byte the String of the counterkey.Key it returns,
// which is the target counter a descriptor gate always had (counters
// already stored must keep being found) and reads back as itself, for
// every algorithm, escaped values and share_threshold patterns.
func TestDescriptorKeyIsTheCounterKey(t *testing.T) {
	entries := [][]ratelimit.DescriptorEntry{
		{{Key: "api_key"}},
		{{Key: "route", Value: "checkout"}, {Key: "tenant", Value: "t42"}},
		{{Key: "path", Value: "/files/a b*c%"}, {Key: "k|e=y", Value: "ü"}},
	}
	for _, alg := range []Algorithm{"", AlgorithmFixedWindow, AlgorithmSlidingWindow, AlgorithmTokenBucket} {
		for _, es := range entries {
			for _, shared := range [][]string{nil, {"/files/*"}} {
				for _, w := range []int{1, 3600, 86400} {
					path := ratelimit.DescriptorCounterPath("my domain", es, shared)
					want := counterkey.Key{Kind: counterkey.KindTarget, Algorithm: counterkey.KeyAlgorithm(alg),
						DefinitionID: ratelimit.DefinitionID(ratelimit.AxisTarget, ratelimit.EntityDescriptor, path, w)}.String()
					k, got := counterkey.DescriptorWithString(alg, "my domain", es, shared, w)
					if got != want || k.String() != want {
						t.Errorf("counterkey.DescriptorWithString(%q, %v, %v, %d) = %q (String %q), want %q", alg, es, shared, w, got, k.String(), want)
					}
					if back, err := counterkey.Parse(got); err != nil || back != k {
						t.Errorf("counterkey.Parse(%q) = %+v, %v; want %+v", got, back, err, k)
					}
					if pub := counterkey.Descriptor(alg, "my domain", es, shared, w); pub != k {
						t.Errorf("counterkey.Descriptor = %+v, want %+v", pub, k)
					}
				}
			}
		}
	}
}

// TestDescriptorKeyLiterals pins the keys' text (the stored format, hence
// literals): the escaping of values (a request's '*' is never a
// wildcard), share_threshold's pattern, the algorithm's mark.
func TestDescriptorKeyLiterals(t *testing.T) {
	es := []ratelimit.DescriptorEntry{{Key: "path", Value: "/files/a b*"}}
	for _, tt := range []struct {
		alg    Algorithm
		shared []string
		want   string
	}{
		{"", nil, "t|target:descriptor:rl/path=%2Ffiles%2Fa%20b%2A:60"},
		{AlgorithmTokenBucket, nil, "t.tb|target:descriptor:rl/path=%2Ffiles%2Fa%20b%2A:60"},
		{AlgorithmSlidingWindow, []string{"/files/*"}, "t.sw|target:descriptor:rl/path=%2Ffiles%2F*:60"},
	} {
		if got := counterkey.Descriptor(tt.alg, "rl", es, tt.shared, 60).String(); got != tt.want {
			t.Errorf("counterkey.Descriptor(%q, %v) = %q, want %q", tt.alg, tt.shared, got, tt.want)
		}
	}
}
