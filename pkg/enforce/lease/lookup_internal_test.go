package lease

import (
	"hash/maphash"
	"strconv"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// The cache in front of the leases never hands out a lease the map no
// longer holds: once a key's lease is retired, the next call on the key
// gets the key's new lease, and a key sharing the old one's slot gets its
// own.
func TestLookupPassesOverRetiredAndOtherKeys(t *testing.T) {
	now := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	l, err := New(keepStore{}, Options{All: true, Time: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	g := enforce.CounterGate{Key: "k", Algorithm: enforce.AlgorithmFixedWindow, Window: time.Hour, Limit: 1000, Enforce: true}
	first := l.get(g, 1, now)
	if first == nil || l.get(g, 1, now) != first {
		t.Fatalf("a key's second call does not find its lease: %p", first)
	}
	l.retire(first)
	second := l.get(g, 1, now)
	if second == nil || second == first {
		t.Fatalf("after retiring, the key's call got %p, want a new lease (not %p)", second, first)
	}
	if v, ok := l.leases.Load(g.Key); !ok || v.(*lease) != second {
		t.Fatalf("the map holds %v, not the lease the call got", v)
	}
	// Another key whose hash falls in the same slot.
	slot := maphash.String(l.seed, g.Key) & (recentSlots - 1)
	other := g
	for i := 0; ; i++ {
		other.Key = "o" + strconv.Itoa(i)
		if maphash.String(l.seed, other.Key)&(recentSlots-1) == slot {
			break
		}
	}
	o := l.get(other, 1, now)
	if o == nil || o == second || o.gate.Key != other.Key {
		t.Fatalf("a key sharing the slot got %p (key %q)", o, o.gate.Key)
	}
	if got := l.get(g, 1, now); got != second {
		t.Errorf("the first key's call got %p after the other key took the slot, want %p", got, second)
	}
}
