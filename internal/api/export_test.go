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

// RouteQuery is one route's pattern and the query parameters it accepts.
type RouteQuery struct {
	Pattern string
	Params  []string
}

// RouteQueries lists every route of routes.go with what it accepts.
func (s *Server) RouteQueries() []RouteQuery {
	var out []RouteQuery
	for _, rt := range s.routes() {
		q := RouteQuery{Pattern: rt.pattern}
		for _, p := range rt.query {
			q.Params = append(q.Params, p.name)
		}
		out = append(out, q)
	}
	return out
}
