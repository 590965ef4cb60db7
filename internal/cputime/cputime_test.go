//go:build unix

package cputime

import "testing"

// Spinning for a while shows up as CPU time used.
func TestProcessGrows(t *testing.T) {
	before := Process()
	if before <= 0 {
		t.Fatalf("Process() = %v at start, want the CPU a Go test has already used", before)
	}
	x := 0
	for Process()-before <= 0 {
		for i := range 1_000_000 {
			x += i
		}
	}
	_ = x
}
