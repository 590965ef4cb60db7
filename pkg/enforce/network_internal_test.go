package enforce

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestNetworkIndexCopiesOnWrite: a patched index sees the patch and its
// prefix lengths; the index it was made from does not change.
func TestNetworkIndexCopiesOnWrite(t *testing.T) {
	t.Parallel()
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	old := newNetworkIndex().with(map[netip.Prefix]*member{
		p("10.0.0.0/8"):    {groups: []string{"wide"}},
		p("10.1.0.0/16"):   {groups: []string{"narrow"}},
		p("2001:db8::/32"): {groups: []string{"v6"}},
	})
	q := member{groups: []string{ratelimit.GroupQuarantineCallers}, quarantined: true}
	next := old.with(map[netip.Prefix]*member{p("10.1.0.0/16"): nil, p("10.1.2.3/32"): &q, p("2001:db8:1::/48"): &q})
	for _, c := range []struct {
		idx  networkIndex
		addr string
		want string // the network found, "" for none
	}{
		{old, "10.1.2.3", "10.1.0.0/16"}, {old, "10.2.0.1", "10.0.0.0/8"}, {old, "2001:db8:1::1", "2001:db8::/32"},
		{old, "192.0.2.1", ""},
		{next, "10.1.2.3", "10.1.2.3/32"}, {next, "10.1.2.4", "10.0.0.0/8"}, {next, "2001:db8:1::1", "2001:db8:1::/48"},
		{next, "2001:db8:2::1", "2001:db8::/32"},
	} {
		got, _, ok := c.idx.lookup(a(c.addr))
		if (ok && got.String() != c.want) || (!ok && c.want != "") {
			t.Errorf("lookup(%s) = %v, %v; want %q", c.addr, got, ok, c.want)
		}
	}
	if fmt.Sprint(old.lens4, old.lens6, next.lens4, next.lens6) != "[16 8] [32] [32 8] [48 32]" {
		t.Errorf("lengths: old %v %v, next %v %v", old.lens4, old.lens6, next.lens4, next.lens6)
	}
	if old.len() != 3 || next.len() != 4 {
		t.Errorf("len: old %d, next %d", old.len(), next.len())
	}
	// Deleting what is not there changes no count.
	if again := next.with(map[netip.Prefix]*member{p("172.16.0.0/12"): nil}); fmt.Sprint(again.lens4) != "[32 8]" {
		t.Errorf("lengths after deleting an absent network: %v", again.lens4)
	}
}

// A reload by ids patches the networks as it patches other memberships:
// a network notified and read is replaced, one notified and gone is
// dropped, others are kept.
func TestNetworkReloadByIDs(t *testing.T) {
	t.Parallel()
	src := &rowsSource{state: State{Memberships: []ratelimit.Membership{
		{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8", Groups: []string{"a"}},
		{SubjectType: ratelimit.SubjectNetwork, Subject: "10.1.0.0/16", Groups: []string{"b"}},
		{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"c"}},
	}}}
	now := time.Now()
	prev, _, err := loadSnapshot(context.Background(), src, now)
	if err != nil {
		t.Fatal(err)
	}
	src.state.Memberships = []ratelimit.Membership{
		{SubjectType: ratelimit.SubjectNetwork, Subject: "10.0.0.0/8", Groups: []string{ratelimit.GroupQuarantineCallers}},
		{SubjectType: ratelimit.SubjectUser, Subject: "alice", Groups: []string{"c"}},
	}
	var ch changes
	ch.add(Change{Table: TableMemberships, IDs: []string{"network:10.0.0.0/8", "network:10.1.0.0/16"}})
	next, _, err := loadChanges(context.Background(), src, prev, ch, now)
	if err != nil {
		t.Fatal(err)
	}
	if n, m, ok := next.networks.lookup(netip.MustParseAddr("10.1.2.3")); !ok || n.String() != "10.0.0.0/8" || !m.quarantinedAt(now) {
		t.Errorf("after the patch 10.1.2.3 is in %v (%+v, %v), want the quarantined 10.0.0.0/8", n, m, ok)
	}
	if n, _, _ := prev.networks.lookup(netip.MustParseAddr("10.1.2.3")); n.String() != "10.1.0.0/16" {
		t.Errorf("the previous snapshot changed: 10.1.2.3 is in %v", n)
	}
	if m, ok := next.members.get("user:alice"); !ok || m.groups[0] != "c" {
		t.Errorf("alice lost: %+v", m)
	}
	if _, ok := next.members.get("network:10.0.0.0/8"); ok {
		t.Error("a network is in the member index too")
	}
}

// rowsSource serves state whole and by ids.
type rowsSource struct{ state State }

func (s *rowsSource) Load(context.Context) (State, error) { return s.state, nil }
func (s *rowsSource) LoadTables(_ context.Context, req TablesRequest) (Rows, error) {
	return SelectRows(s.state, req), nil
}
func (s *rowsSource) Capabilities() SourceCapabilities { return SourceCapabilities{} }
func (s *rowsSource) LockOut(context.Context, Lockout) (bool, error) {
	return false, ErrNotImplemented
}
func (s *rowsSource) CountQuarantined(context.Context, time.Time) (int64, int64, error) {
	return 0, 0, ErrNotImplemented
}
func (s *rowsSource) Watch(ctx context.Context, ready func(), _ func(Change)) error {
	ready()
	<-ctx.Done()
	return ctx.Err()
}

// randomNetworks builds n networks, half IPv4 and half IPv6, of the
// prefix lengths given (documentation ranges excluded, so the benchmark's
// addresses are in none).
func randomNetworks(n int, r *rand.Rand, lens4, lens6 []int) map[netip.Prefix]*member {
	out := make(map[netip.Prefix]*member, n)
	m := &member{groups: []string{"g"}}
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
			idx := newNetworkIndex().with(randomNetworks(n, rand.New(rand.NewPCG(1, 2)), set.lens4, set.lens6))
			for _, c := range []struct{ name, addr string }{
				{"ipv4", "192.0.2.1"}, {"ipv6", "2001:db8::1"},
			} {
				a := netip.MustParseAddr(c.addr)
				b.Run(fmt.Sprintf("lengths=%s/networks=%d/%s", set.name, n, c.name), func(b *testing.B) {
					for b.Loop() {
						idx.lookup(a)
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
