package api

import "context"

// What the external tests need of the internals.

// SweepResult is one sweep round's result.
type SweepResult = sweepResult

// SweepEvents runs one round of the events retention sweep.
func (s *Server) SweepEvents(ctx context.Context) SweepResult { return s.sweepEvents(ctx) }

// SweepLockouts runs one round of the expired-lockout sweep.
func (s *Server) SweepLockouts(ctx context.Context) SweepResult { return s.sweepLockouts(ctx) }

// OnSweepLocked has f called, with the round's context, as each sweep
// round starts under its lock (nil: no hook).
func (s *Server) OnSweepLocked(f func(ctx context.Context, lock string)) {
	if f == nil {
		s.sweepHook.Store(nil)
		return
	}
	s.sweepHook.Store(&f)
}
