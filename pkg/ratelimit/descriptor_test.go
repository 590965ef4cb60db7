package ratelimit_test

import (
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestDescriptorNameRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		domain  string
		entries []ratelimit.DescriptorEntry
		want    string
	}{
		{"mongo_cps", []ratelimit.DescriptorEntry{{Key: "database", Value: "users"}}, "mongo_cps/database=users"},
		{"rl", []ratelimit.DescriptorEntry{{Key: "remote_address"}}, "rl/remote_address"},
		{"a b", []ratelimit.DescriptorEntry{{Key: "path", Value: "/files/*"}, {Key: "k=v", Value: "100%"}}, "a%20b/path=%2Ffiles%2F*/k%3Dv=100%25"},
	}
	for _, c := range cases {
		name := ratelimit.DescriptorName(c.domain, c.entries)
		if name != c.want {
			t.Errorf("DescriptorName(%q, %v) = %q, want %q", c.domain, c.entries, name, c.want)
		}
		domain, entries, err := ratelimit.ParseDescriptorName("name", name)
		if err != nil || domain != c.domain || len(entries) != len(c.entries) {
			t.Fatalf("ParseDescriptorName(%q) = %q %v %v", name, domain, entries, err)
		}
		for i := range entries {
			if entries[i] != c.entries[i] {
				t.Errorf("ParseDescriptorName(%q) entry %d = %v, want %v", name, i, entries[i], c.entries[i])
			}
		}
	}
	// A request value holding '*' never reads as the wildcard it matched.
	if p := ratelimit.DescriptorCounterPath("rl", []ratelimit.DescriptorEntry{{Key: "k", Value: "a*"}}, nil); p != "rl/k=a%2A" {
		t.Errorf("counter path of a literal '*' = %q, want rl/k=a%%2A", p)
	}
	for _, bad := range []string{"", "rl", "/k", "rl/", "rl/=v", "rl/k=", "rl/k=a b", "rl/k=%2f", "rl/k=%41", "rl/" + strings.Repeat("k/", 17) + "k"} {
		if _, err := ratelimit.DescriptorNameNormalizer("name", bad); err == nil {
			t.Errorf("DescriptorNameNormalizer(%q) accepted it", bad)
		} else if !strings.HasPrefix(err.Message, "name: ") {
			t.Errorf("DescriptorNameNormalizer(%q) = %q, want a message naming the field", bad, err.Message)
		}
	}
}
