package enforcetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlctl/rlctl/pkg/enforce"
)

// passThrough passes every method of a counter store but Take to the
// store it wraps: the fault wrappers below break Take alone.
type passThrough struct{ next enforce.CounterStore }

// ReturnUnused passes through.
func (p passThrough) ReturnUnused(ctx context.Context, rs []enforce.Return, deadline time.Time) error {
	return p.next.ReturnUnused(ctx, rs, deadline)
}

// Reset passes through.
func (p passThrough) Reset(ctx context.Context, gates []enforce.CounterGate, now, deadline time.Time) error {
	return p.next.Reset(ctx, gates, now, deadline)
}

// Sweep passes through.
func (p passThrough) Sweep(ctx context.Context, now time.Time) (int64, error) {
	return p.next.Sweep(ctx, now)
}

// BackendName is the wrapped store's.
func (p passThrough) BackendName() string { return p.next.BackendName() }

// Capabilities are the wrapped store's.
func (p passThrough) Capabilities() enforce.CounterCapabilities { return p.next.Capabilities() }

// TakeLocal passes through: a wrapped store that decides in memory still
// sends its misses through next, which reaches the wrapper's Take.
func (p passThrough) TakeLocal(ctx context.Context, req enforce.TakeRequest, into enforce.TakeResult, next enforce.TakeFunc) (enforce.TakeResult, error) {
	return p.next.TakeLocal(ctx, req, into, next)
}

// FailingStore is a counter store whose Take fails with one error until
// Repair, then passes every call to the store it wraps. Every other
// method always passes through.
type FailingStore struct {
	passThrough
	err      error
	repaired atomic.Bool
	calls    atomic.Int64
}

// Failing wraps s so every Take fails with err (consuming nothing) until
// Repair is called.
func Failing(s enforce.CounterStore, err error) *FailingStore {
	return &FailingStore{passThrough: passThrough{s}, err: err}
}

// Take fails with the store's error, or after Repair passes the batch on.
func (f *FailingStore) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	if f.repaired.Load() {
		return f.next.Take(ctx, reqs, deadline)
	}
	f.calls.Add(1)
	return nil, fmt.Errorf("enforcetest: failing store: %w", f.err)
}

// Repair makes every later Take reach the wrapped store.
func (f *FailingStore) Repair() { f.repaired.Store(true) }

// Break makes every later Take fail again, as after Failing.
func (f *FailingStore) Break() { f.repaired.Store(false) }

// Failed is how many Takes have failed.
func (f *FailingStore) Failed() int64 { return f.calls.Load() }

// HangingStore is a counter store whose Take answers nothing: it ignores
// its deadline (as a server behind a broken network would) and returns
// only when its context ends, with an error wrapping
// enforce.ErrOutcomeUnknown, having taken nothing. Takes that start after
// Release pass through to the store it wraps; those already hanging stay
// lost, as requests lost on a network stay lost when it comes back. Every
// other method always passes through.
type HangingStore struct {
	passThrough
	released atomic.Bool
	entered  chan struct{}
	enterOne sync.Once
}

// Hanging wraps s so every Take hangs until its context ends (until
// Release).
func Hanging(s enforce.CounterStore) *HangingStore {
	return &HangingStore{passThrough: passThrough{s}, entered: make(chan struct{})}
}

// Take hangs; see HangingStore.
func (h *HangingStore) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	if h.released.Load() {
		return h.next.Take(ctx, reqs, deadline)
	}
	h.enterOne.Do(func() { close(h.entered) })
	<-ctx.Done()
	return nil, fmt.Errorf("enforcetest: hanging store: %w: %w", enforce.ErrOutcomeUnknown, ctx.Err())
}

// Entered is closed once a Take has reached the store.
func (h *HangingStore) Entered() <-chan struct{} { return h.entered }

// Release ends the hang for the Takes that start after it.
func (h *HangingStore) Release() { h.released.Store(true) }

// SlowStore is a counter store whose every Take waits a while before it
// reaches the store it wraps: a store that answers, but slower than calls
// arrive. Every other method passes through at once.
type SlowStore struct {
	passThrough
	delay time.Duration
}

// Slowed wraps s so every Take waits delay (or until its context ends)
// first.
func Slowed(s enforce.CounterStore, delay time.Duration) *SlowStore {
	return &SlowStore{passThrough: passThrough{s}, delay: delay}
}

// Take waits, then passes the batch on.
func (s *SlowStore) Take(ctx context.Context, reqs []enforce.TakeRequest, deadline time.Time) ([]enforce.TakeResult, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, fmt.Errorf("enforcetest: slow store: %w: %w", enforce.ErrTimedOut, ctx.Err())
	}
	return s.next.Take(ctx, reqs, deadline)
}
