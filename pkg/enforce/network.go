package enforce

import (
	"hash/maphash"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// networkIndex holds the network memberships (subject_type network, a
// CIDR) for longest-prefix match: one map per prefix length, and the
// lengths present, longest first, per address family. A lookup masks the
// address to each length present and probes one map per length, so its
// cost is bounded by the distinct prefix lengths in use (at most 33 for
// IPv4, 129 for IPv6), never by the number of networks
// (docs/performance.md, "Networks").
//
// Like memberIndex it is sharded by a hash of the prefix so a change
// copies about 1/256 of the networks; the per-length counts are a fixed
// array copied whole. A published index is never written.
type networkIndex struct {
	seed   maphash.Seed
	shards *[memberShards]map[netip.Prefix]member
	// count4[l], count6[l]: networks of prefix length l.
	count4 *[33]int
	count6 *[129]int
	// lens4, lens6: the lengths with a network, longest first.
	lens4, lens6 []int
}

func newNetworkIndex() networkIndex {
	return networkIndex{seed: maphash.MakeSeed(), shards: new([memberShards]map[netip.Prefix]member),
		count4: new([33]int), count6: new([129]int)}
}

func (x networkIndex) shard(p netip.Prefix) int { return int(maphash.Comparable(x.seed, p) % memberShards) }

// networkPrefix reads a network membership's id (network:<cidr>) or
// subject; ok is false for anything else.
func networkPrefix(id string) (netip.Prefix, bool) {
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

// isNetworkID reports whether a membership id names a network.
func isNetworkID(id string) bool { return strings.HasPrefix(id, ratelimit.SubjectNetwork+":") }

// lookup is the most specific network containing a, with its membership.
func (x networkIndex) lookup(a netip.Addr) (netip.Prefix, member, bool) {
	if x.shards == nil || !a.IsValid() {
		return netip.Prefix{}, member{}, false
	}
	lens := x.lens6
	if a.Is4() {
		lens = x.lens4
	}
	for _, l := range lens {
		p, err := a.Prefix(l)
		if err != nil {
			continue
		}
		if m, ok := x.shards[x.shard(p)][p]; ok {
			return p, m, true
		}
	}
	return netip.Prefix{}, member{}, false
}

// len counts the networks.
func (x networkIndex) len() int {
	n := 0
	if x.shards != nil {
		for _, s := range x.shards {
			n += len(s)
		}
	}
	return n
}

// with returns x with changes applied (a nil member deletes), copying the
// shards they touch and the counts.
func (x networkIndex) with(changes map[netip.Prefix]*member) networkIndex {
	if x.shards == nil {
		x = newNetworkIndex()
	}
	shards := *x.shards
	c4, c6 := *x.count4, *x.count6
	var copied [memberShards]bool
	for p, m := range changes {
		i := x.shard(p)
		if !copied[i] {
			shards[i] = maps.Clone(shards[i])
			if shards[i] == nil {
				shards[i] = map[netip.Prefix]member{}
			}
			copied[i] = true
		}
		_, had := shards[i][p]
		delta := 0
		if m == nil {
			delete(shards[i], p)
			if had {
				delta = -1
			}
		} else {
			shards[i][p] = *m
			if !had {
				delta = 1
			}
		}
		if p.Addr().Is4() {
			c4[p.Bits()] += delta
		} else {
			c6[p.Bits()] += delta
		}
	}
	out := networkIndex{seed: x.seed, shards: &shards, count4: &c4, count6: &c6}
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

// each calls f for every network until it returns false.
func (x networkIndex) each(f func(netip.Prefix, member) bool) {
	if x.shards == nil {
		return
	}
	for _, s := range x.shards {
		for p, m := range s {
			if !f(p, m) {
				return
			}
		}
	}
}
