package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/migrate"
)

// handleHealthz answers while the process serves: liveness only.
func handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
}

// readyCheckTime bounds each ReadyCheck: well under a second, so that
// /readyz turns 503 within a second of a dependency going away even when
// it hangs rather than refuses (a stalled Redis), and a load balancer's
// probe (often 1-3 s) gets an answer, not a timeout.
const readyCheckTime = 500 * time.Millisecond

// ReadyCheck is a dependency /readyz asks about besides the database: the
// counter store when counters live elsewhere (Opts.Ready).
type ReadyCheck struct {
	// Name says what is checked, in /readyz's answer: "counter store (redis)".
	Name string
	// Check returns nil when the dependency can serve now; it gets a
	// context of its own short deadline.
	Check func(ctx context.Context) error
}

// handleReadyz answers 200 only when the database answers and its schema is
// current, and every ReadyCheck passes, so a load balancer never routes to
// a replica that cannot serve. The body says what is missing.
func (s *Server) handleReadyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		// The checks run beside the database's, each on its own deadline.
		failed := make([]error, len(s.ready))
		var wg sync.WaitGroup
		for i, c := range s.ready {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, readyCheckTime)
				defer cancel()
				if err := c.Check(cctx); err != nil {
					failed[i] = fmt.Errorf("%s unavailable: %w", c.Name, err)
				}
			})
		}
		st, err := migrate.Status(ctx, s.store.Pool())
		wg.Wait()
		var why []string
		switch {
		case err != nil:
			s.log.Warn("readiness check failed", "err", err)
			why = append(why, "database unavailable")
		case st.Behind():
			why = append(why, "database schema is behind: run rlapi migrate")
		}
		for _, err := range failed {
			if err != nil {
				s.log.Warn("readiness check failed", "err", err)
				why = append(why, err.Error())
			}
		}
		if len(why) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(strings.Join(why, "\n") + "\n"))
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
}
