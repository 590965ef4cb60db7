package plan

import (
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Networks holds the network memberships (subject_type network, a
// CIDR) for longest-prefix match: one map per prefix length, and the
// lengths present, longest first, per address family. A lookup masks the
// address to each length present and probes one map per length, so its
// cost is bounded by the distinct prefix lengths in use (at most 33 for
// IPv4, 129 for IPv6), never by the number of networks
// (docs/performance.md, "Networks").
//
// Like Members it is sharded by a hash of the prefix so a change
// copies about 1/256 of the networks; the per-length counts are a fixed
// array copied whole. A published index is never written.
type Networks struct {
	shards *[memberShards]map[netKey]Member
	// count4[l], count6[l]: networks of prefix length l.
	count4 *[33]int
	count6 *[129]int
	// lens4, lens6: the lengths with a network, longest first.
	lens4, lens6 []int
}

// netKey is a network as a map key: its masked address as two words and
// its length. Plain integers hash with the runtime's fast memory hash and
// mask with two ANDs, where netip.Prefix would go through maphash's
// generic path and Addr.Prefix's checks (a probe of 100,000 networks:
// 15 ns instead of 50).
type netKey struct {
	hi, lo uint64
	bits   uint8
	v4     bool
}

// addrWords is a's 128 bits (an IPv4 address in lo's low 32 bits).
func addrWords(a netip.Addr) (hi, lo uint64) {
	if a.Is4() {
		b := a.As4()
		return 0, uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	}
	b := a.As16()
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return hi, lo
}

// keyOf masks the words of an address of family v4 to bits.
func keyOf(hi, lo uint64, bits int, v4 bool) netKey {
	switch {
	case v4:
		lo &= uint64(^(uint32(0xffffffff) >> bits))
	case bits <= 64:
		hi &= ^(^uint64(0) >> bits)
		lo = 0
	default:
		lo &= ^(^uint64(0) >> (bits - 64))
	}
	return netKey{hi: hi, lo: lo, bits: uint8(bits), v4: v4}
}

func prefixKey(p netip.Prefix) netKey {
	hi, lo := addrWords(p.Addr())
	return keyOf(hi, lo, p.Bits(), p.Addr().Is4())
}

// prefixOf is the netip.Prefix of k.
func (k netKey) prefix() netip.Prefix {
	if k.v4 {
		return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(k.lo >> 24), byte(k.lo >> 16), byte(k.lo >> 8), byte(k.lo)}), int(k.bits))
	}
	var b [16]byte
	for i := range 8 {
		b[i] = byte(k.hi >> (56 - 8*i))
		b[8+i] = byte(k.lo >> (56 - 8*i))
	}
	return netip.PrefixFrom(netip.AddrFrom16(b), int(k.bits))
}

// shard spreads the keys over the shards (a multiplicative hash: the
// keys' low bits are mostly zero after masking).
func (k netKey) shard() int {
	h := (k.hi ^ k.lo*0x9e3779b97f4a7c15 ^ uint64(k.bits)<<1) * 0xbf58476d1ce4e5b9
	return int(h >> 56) // memberShards = 256
}

func NewNetworks() Networks {
	return Networks{shards: new([memberShards]map[netKey]Member), count4: new([33]int), count6: new([129]int)}
}

// NetworkPrefix reads a network membership's id (network:<cidr>) or
// subject; ok is false for anything else.
func NetworkPrefix(id string) (netip.Prefix, bool) {
	cidr, ok := strings.CutPrefix(id, ratelimit.SubjectNetwork+":")
	if !ok {
		return netip.Prefix{}, false
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

// IsNetworkID reports whether a membership id names a network.
func IsNetworkID(id string) bool { return strings.HasPrefix(id, ratelimit.SubjectNetwork+":") }

// Lookup is the most specific network containing a, with its membership.
func (x Networks) Lookup(a netip.Addr) (netip.Prefix, Member, bool) {
	if x.shards == nil || !a.IsValid() {
		return netip.Prefix{}, Member{}, false
	}
	a = a.Unmap()
	v4 := a.Is4()
	lens := x.lens6
	if v4 {
		lens = x.lens4
	}
	hi, lo := addrWords(a)
	for _, l := range lens {
		k := keyOf(hi, lo, l, v4)
		if m, ok := x.shards[k.shard()][k]; ok {
			return k.prefix(), m, true
		}
	}
	return netip.Prefix{}, Member{}, false
}

// Len counts the networks.
func (x Networks) Len() int {
	n := 0
	if x.shards != nil {
		for _, s := range x.shards {
			n += len(s)
		}
	}
	return n
}

// With returns x with changes applied (a nil Member deletes), copying the
// shards they touch and the counts.
func (x Networks) With(changes map[netip.Prefix]*Member) Networks {
	if x.shards == nil {
		x = NewNetworks()
	}
	shards := *x.shards
	c4, c6 := *x.count4, *x.count6
	var copied [memberShards]bool
	for p, m := range changes {
		k := prefixKey(p.Masked())
		i := k.shard()
		if !copied[i] {
			shards[i] = maps.Clone(shards[i])
			if shards[i] == nil {
				shards[i] = map[netKey]Member{}
			}
			copied[i] = true
		}
		_, had := shards[i][k]
		delta := 0
		if m == nil {
			delete(shards[i], k)
			if had {
				delta = -1
			}
		} else {
			shards[i][k] = *m
			if !had {
				delta = 1
			}
		}
		if k.v4 {
			c4[k.bits] += delta
		} else {
			c6[k.bits] += delta
		}
	}
	out := Networks{shards: &shards, count4: &c4, count6: &c6}
	out.lens4, out.lens6 = lengths(c4[:]), lengths(c6[:])
	return out
}

// lengths lists the indexes of counts that are not zero, largest first.
func lengths(counts []int) []int {
	var out []int
	for l, n := range counts {
		if n > 0 {
			out = append(out, l)
		}
	}
	slices.Reverse(out)
	return out
}

// Each calls f for every network until it returns false.
func (x Networks) Each(f func(netip.Prefix, Member) bool) {
	if x.shards == nil {
		return
	}
	for _, s := range x.shards {
		for k, m := range s {
			if !f(k.prefix(), m) {
				return
			}
		}
	}
}
