package simulate

import (
	"time"
)

// maxBuckets bounds the buckets a histogram keeps per run: a long trace
// widens the buckets instead of growing without end.
const maxBuckets = 10000

// autoBuckets is how many buckets the automatic width aims at (at most).
const autoBuckets = 60

const day = 24 * time.Hour

// niceWidths are the widths an automatic bucket takes.
var niceWidths = []time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	day, 2 * day, 7 * day, 14 * day, 28 * day,
}

// cell is one bucket of one run.
type cell struct{ allowed, denied int64 }

// histogram counts allowed and denied calls per time bucket, for every
// run at once. Buckets are aligned on the Unix epoch (as fixed windows
// are), so a bucket of the window's length is one window.
type histogram struct {
	width time.Duration
	// base is the width asked for (--bucket); zero for automatic widths.
	base    time.Duration
	origin  int64 // Unix ns of bucket 0's start, a multiple of width
	started bool
	runs    [][]cell
}

// newHistogram counts for n runs in buckets of width (0: automatic).
func newHistogram(n int, width time.Duration) *histogram {
	h := &histogram{base: width, width: width, runs: make([][]cell, n)}
	if width == 0 {
		h.width = niceWidths[0]
	}
	return h
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// index returns the bucket of t, widening the buckets when t would make
// more than maxBuckets of them, and growing every run to it.
func (h *histogram) index(t time.Time) int {
	ns := t.UnixNano()
	if !h.started {
		h.origin = floorDiv(ns, int64(h.width)) * int64(h.width)
		h.started = true
	}
	for (ns-h.origin)/int64(h.width) >= maxBuckets {
		h.widen(ns)
	}
	i := int((ns - h.origin) / int64(h.width))
	for r := range h.runs {
		for len(h.runs[r]) <= i {
			h.runs[r] = append(h.runs[r], cell{})
		}
	}
	return i
}

// count adds one call of run r to bucket i.
func (h *histogram) count(r, i int, allowed bool) {
	if allowed {
		h.runs[r][i].allowed++
	} else {
		h.runs[r][i].denied++
	}
}

// wider returns the next width after w: a nice width that is a multiple
// of w when automatic, else a multiple of the width asked for (2, 5, 10,
// 20, 50, 100... times it).
func (h *histogram) wider(w time.Duration) time.Duration {
	if h.base == 0 {
		for _, n := range niceWidths {
			if n > w && n%w == 0 {
				return n
			}
		}
		return 2 * w
	}
	for k := int64(1); ; k *= 10 {
		for _, m := range []int64{2, 5, 10} {
			if n := h.base * time.Duration(k*m); n > w && n%w == 0 {
				return n
			}
		}
	}
}

// widen merges the buckets into wider ones until the last call (ns) fits.
func (h *histogram) widen(ns int64) {
	w := h.width
	for {
		w = h.wider(w)
		origin := floorDiv(h.origin, int64(w)) * int64(w)
		if (ns-origin)/int64(w) < maxBuckets {
			break
		}
	}
	h.regroup(w)
}

// regroup merges the buckets into buckets of w (a multiple of the width).
func (h *histogram) regroup(w time.Duration) {
	h.runs, h.origin = h.grouped(w)
	h.width = w
}

// grouped returns the buckets merged into buckets of w (a multiple of the
// width), and their origin.
func (h *histogram) grouped(w time.Duration) ([][]cell, int64) {
	origin := floorDiv(h.origin, int64(w)) * int64(w)
	out := make([][]cell, len(h.runs))
	for r, cells := range h.runs {
		if len(cells) == 0 {
			continue
		}
		end := h.origin + int64(len(cells))*int64(h.width) // exclusive
		out[r] = make([]cell, (end-1-origin)/int64(w)+1)
		for j, c := range cells {
			k := (h.origin + int64(j)*int64(h.width) - origin) / int64(w)
			out[r][k].allowed += c.allowed
			out[r][k].denied += c.denied
		}
	}
	return out, origin
}

// display returns the buckets to show: as counted when a width was asked
// for, else merged into the narrowest nice width that gives at most
// autoBuckets of them.
func (h *histogram) display() (cells [][]cell, origin int64, width time.Duration) {
	if h.base != 0 || len(h.runs) == 0 {
		return h.runs, h.origin, h.width
	}
	n := int64(len(h.runs[0]))
	w := h.width
	for {
		origin := floorDiv(h.origin, int64(w)) * int64(w)
		end := h.origin + n*int64(h.width)
		if (end-1-origin)/int64(w)+1 <= autoBuckets || n == 0 {
			break
		}
		w = h.wider(w)
	}
	cells, origin = h.grouped(w)
	return cells, origin, w
}
