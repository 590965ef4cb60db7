package api

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/rlctl/rlctl/pkg/wire"
)

// ServerSetup is how this replica was set up, for GET /api/server: the
// parts rlapi's flags decide, and the ping of the counter store.
type ServerSetup struct {
	// Info is the static part; its CounterStore's Reachable, LatencyMS and
	// Error are filled per request from PingCounters.
	Info wire.ServerInfo
	// PingCounters asks the counter store whether it answers (nil: the
	// store is reported unreachable, with that reason).
	PingCounters func(ctx context.Context) error
	// Degraded says whether the replica decides in its degraded mode now
	// (nil: it has none), for Info.FailPolicy.Degraded.
	Degraded func() bool
}

// handleServer answers GET /api/server: the replica's setup, with a fresh
// ping of its counter store on the readiness checks' deadline.
func (s *Server) handleServer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := s.setup.Info
		info.Replica, _ = os.Hostname()
		if s.setup.Degraded != nil {
			info.FailPolicy.Degraded = s.setup.Degraded()
		}
		cs := &info.CounterStore
		if s.setup.PingCounters == nil {
			cs.Error = "this rlapi was given no way to ping its counter store"
		} else {
			ctx, cancel := context.WithTimeout(r.Context(), readyCheckTime)
			start := time.Now()
			err := s.setup.PingCounters(ctx)
			took := time.Since(start)
			cancel()
			if err != nil {
				cs.Error = err.Error()
			} else {
				cs.Reachable = true
				cs.LatencyMS = float64(took.Microseconds()) / 1000
			}
		}
		encode(w, http.StatusOK, info)
	})
}
