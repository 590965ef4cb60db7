package plan

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestNetworkIndexCopiesOnWrite: a patched index sees the patch and its
// prefix lengths; the index it was made from does not change.
func TestNetworkIndexCopiesOnWrite(t *testing.T) {
	t.Parallel()
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	old := NewNetworks().With(map[netip.Prefix]*Member{
		p("10.0.0.0/8"):    {Groups: []string{"wide"}},
		p("10.1.0.0/16"):   {Groups: []string{"narrow"}},
		p("2001:db8::/32"): {Groups: []string{"v6"}},
	})
	q := Member{Groups: []string{ratelimit.GroupQuarantineCallers}, Quarantined: true}
	next := old.With(map[netip.Prefix]*Member{p("10.1.0.0/16"): nil, p("10.1.2.3/32"): &q, p("2001:db8:1::/48"): &q})
	for _, c := range []struct {
		idx  Networks
		addr string
		want string // the network found, "" for none
	}{
		{old, "10.1.2.3", "10.1.0.0/16"}, {old, "10.2.0.1", "10.0.0.0/8"}, {old, "2001:db8:1::1", "2001:db8::/32"},
		{old, "192.0.2.1", ""},
		{next, "10.1.2.3", "10.1.2.3/32"}, {next, "10.1.2.4", "10.0.0.0/8"}, {next, "2001:db8:1::1", "2001:db8:1::/48"},
		{next, "2001:db8:2::1", "2001:db8::/32"},
	} {
		got, _, ok := c.idx.Lookup(a(c.addr))
		if (ok && got.String() != c.want) || (!ok && c.want != "") {
			t.Errorf("lookup(%s) = %v, %v; want %q", c.addr, got, ok, c.want)
		}
	}
	if fmt.Sprint(old.lens4, old.lens6, next.lens4, next.lens6) != "[16 8] [32] [32 8] [48 32]" {
		t.Errorf("lengths: old %v %v, next %v %v", old.lens4, old.lens6, next.lens4, next.lens6)
	}
	if old.Len() != 3 || next.Len() != 4 {
		t.Errorf("len: old %d, next %d", old.Len(), next.Len())
	}
	// Deleting what is not there changes no count.
	if again := next.With(map[netip.Prefix]*Member{p("172.16.0.0/12"): nil}); fmt.Sprint(again.lens4) != "[32 8]" {
		t.Errorf("lengths after deleting an absent network: %v", again.lens4)
	}
}

// randomNetworks builds n networks, half IPv4 and half IPv6, of the
// prefix lengths given (documentation ranges excluded, so the benchmark's
// addresses are in none).
func randomNetworks(n int, r *rand.Rand, lens4, lens6 []int) map[netip.Prefix]*Member {
	out := make(map[netip.Prefix]*Member, n)
	m := &Member{Groups: []string{"g"}}
	for len(out) < n {
		if len(out)%2 == 0 {
			a := netip.AddrFrom4([4]byte{byte(1 + r.IntN(150)), byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(256))})
			p, _ := a.Prefix(lens4[r.IntN(len(lens4))])
			out[p] = m
		} else {
			var b [16]byte
			b[0], b[1] = 0x24, byte(r.IntN(256))
			for i := 2; i < 16; i++ {
				b[i] = byte(r.IntN(256))
			}
			p, _ := netip.AddrFrom16(b).Prefix(lens6[r.IntN(len(lens6))])
			out[p] = m
		}
	}
	return out
}

func span(from, to int) []int {
	var out []int
	for l := from; l <= to; l++ {
		out = append(out, l)
	}
	return out
}

// BenchmarkNetworkLookup: the longest-prefix match of one address, with
// 100 and 100,000 networks loaded. The cost is one map probe per distinct
// prefix length of the address's family (probes/op; an address in no
// network probes them all), whatever the number of networks: "typical"
// holds the lengths deny lists and customer lists use (IPv4 /16 /20 /24
// /28 /32, IPv6 /32 /40 /48 /56 /64), "every" every length from IPv4 /8
// and IPv6 /32 to /64 (docs/performance.md, "Networks").
func BenchmarkNetworkLookup(b *testing.B) {
	for _, set := range []struct {
		name         string
		lens4, lens6 []int
	}{
		{"typical", []int{16, 20, 24, 28, 32}, []int{32, 40, 48, 56, 64}},
		{"every", span(8, 32), span(32, 64)},
	} {
		for _, n := range []int{100, 100_000} {
			idx := NewNetworks().With(randomNetworks(n, rand.New(rand.NewPCG(1, 2)), set.lens4, set.lens6))
			for _, c := range []struct{ name, addr string }{
				{"ipv4", "192.0.2.1"}, {"ipv6", "2001:db8::1"},
			} {
				a := netip.MustParseAddr(c.addr)
				b.Run(fmt.Sprintf("lengths=%s/networks=%d/%s", set.name, n, c.name), func(b *testing.B) {
					for b.Loop() {
						idx.Lookup(a)
					}
					lens := idx.lens6
					if a.Is4() {
						lens = idx.lens4
					}
					b.ReportMetric(float64(len(lens)), "probes/op")
				})
			}
		}
	}
}
