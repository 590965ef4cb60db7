// Package tally counts what every decision counts without making two
// cores pass one cache line back and forth: each increment goes to one of
// Shards shards of plain atomic counters, picked by the calling
// goroutine's stack, and the shards are summed into the Prometheus series
// when those are collected (Folding). Every decision adding to the same
// few counters made two cores fight over those cache lines on each call:
// at 64 goroutines deciding in memory from leases, the increments were
// about a twentieth of the CPU. A goroutine keeps its stack while it
// runs, so its increments stay in its shard's cache lines, which no other
// core writes unless a goroutine sharing the shard runs there.
//
// What a scrape sees is exact for every increment that ended before the
// scrape began: each is in a shard or, folded already, in the series.
package tally

import (
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
)

// Slots is the number of counters of a shard. 32 is four cache lines.
const Slots = 32

const (
	shardBits = 6
	shards    = 1 << shardBits
)

// Tallies are the shards; the zero value is not usable (New).
type Tallies struct{ shards *[shards]shard }

// shard is a whole number of cache lines (the array is allocated on its
// own, so shards never share a line).
type shard struct{ n [Slots]atomic.Uint64 }

// New returns empty tallies.
func New() Tallies { return Tallies{shards: new([shards]shard)} }

// Add adds one to slot (0 <= slot < Slots) in the calling goroutine's
// shard.
func (t Tallies) Add(slot int) { t.shard().n[slot].Add(1) }

// shard is the calling goroutine's shard: by the address of its stack,
// hashed (goroutines' stacks are a few KiB apart; a goroutine's frame at
// one call depth keeps its address while the stack is not moved).
func (t Tallies) shard() *shard {
	var here byte
	p := uint64(uintptr(unsafe.Pointer(&here))) >> 10
	return &t.shards[(p*0x9e3779b97f4a7c15)>>(64-shardBits)]
}

// Take takes what the shards counted in slot since the last Take.
func (t Tallies) Take(slot int) uint64 {
	var n uint64
	for i := range t.shards {
		if t.shards[i].n[slot].Load() != 0 {
			n += t.shards[i].n[slot].Swap(0)
		}
	}
	return n
}

// FoldInto adds what slot counted since the last Take to c.
func (t Tallies) FoldInto(c prometheus.Counter, slot int) {
	if n := t.Take(slot); n > 0 {
		c.Add(float64(n))
	}
}

// Counter is one counter kept in a slot, with Prometheus's Inc.
type Counter struct {
	t    Tallies
	slot int
}

// CounterAt is the counter of slot.
func (t Tallies) CounterAt(slot int) Counter { return Counter{t, slot} }

// Inc adds one.
func (c Counter) Inc() { c.t.Add(c.slot) }

// Folding collects Collectors after calling Fold, which adds what the
// tallies counted to their series.
type Folding struct {
	Fold       func()
	Collectors []prometheus.Collector
}

// Describe describes the Collectors.
func (f Folding) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range f.Collectors {
		c.Describe(ch)
	}
}

// Collect folds, then collects the Collectors.
func (f Folding) Collect(ch chan<- prometheus.Metric) {
	f.Fold()
	for _, c := range f.Collectors {
		c.Collect(ch)
	}
}
