package tally

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestTakeCountsEveryIncrementOnce: increments from many goroutines, on
// many shards, are all taken, once, and a second Take finds none.
func TestTakeCountsEveryIncrementOnce(t *testing.T) {
	t.Parallel()
	tl := New()
	const goroutines, each = 64, 1000
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			c := tl.CounterAt(3)
			for range each {
				c.Inc()
				tl.Add(4)
			}
		})
	}
	wg.Wait()
	if got := tl.Take(3); got != goroutines*each {
		t.Errorf("slot 3 took %d, want %d", got, goroutines*each)
	}
	if got := tl.Take(3); got != 0 {
		t.Errorf("a second Take took %d, want 0", got)
	}
	if got := tl.Take(5); got != 0 {
		t.Errorf("an untouched slot took %d", got)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
	f := Folding{Fold: func() { tl.FoldInto(c, 4) }, Collectors: []prometheus.Collector{c}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(f)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetMetric()[0].GetCounter().GetValue() != goroutines*each {
		t.Errorf("the folded series at its collection: %v, want %d", mfs, goroutines*each)
	}
}
