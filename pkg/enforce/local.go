package enforce

import (
	"sync"
)

// The seam's hook for a counter store that decides some calls in memory
// (CounterCapabilities.Local: pkg/enforce/lease's layer, which holds
// blocks of hot keys' capacity). Such a store is asked for each call
// directly, through TakeLocal, rather than through the batcher: a call it
// decides from memory then costs no queue and no goroutine hand-off,
// which on two cores at 64 goroutines cost about twice the decision
// itself (docs/design/leases.md, "The layer and the seam"). What it
// cannot decide it sends back through roundTrip, batched with every other
// call.

// answer is room for the answer of a call of up to maxPooledGates gates.
type answer struct {
	room   [maxPooledGates]bool
	states [maxPooledGates]GateState
}

// maxPooledGates bounds the gates of a call whose answer is pooled.
const maxPooledGates = 8

// answerBuf is into for a call of n gates: from pool (buf, to put back
// once the decision is built: the store keeps no reference once it
// returns, and the decision copies what it reads of it into its gates)
// or, past maxPooledGates, allocated (buf nil).
func answerBuf(pool *sync.Pool, n int) (*answer, TakeResult) {
	if n > maxPooledGates {
		return nil, TakeResult{Room: make([]bool, n), States: make([]GateState, n)}
	}
	buf, _ := pool.Get().(*answer)
	if buf == nil {
		buf = new(answer)
		return buf, TakeResult{Room: buf.room[:n], States: buf.states[:n]}
	}
	// Only the part handed out is cleared: the rest is not read, and a
	// state's clock (time.Time holds a pointer) is cleared under the
	// garbage collector's write barrier while it runs.
	res := TakeResult{Room: buf.room[:n], States: buf.states[:n]}
	clear(res.Room)
	clear(res.States)
	return buf, res
}
