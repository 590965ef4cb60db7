package redis_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// lockedBuffer is a log destination safe for the store's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRestartedEmptyIsLoggedAndCounted: a Redis that crashes and comes
// back without persistence (a new run_id, no keys loaded) is logged at
// WARN as restarted empty, with what that means for the limits, and
// counted in rlctl_redis_node_restarts_total{empty="true"}; the store
// counts on it again afterwards.
func TestRestartedEmptyIsLoggedAndCounted(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	var log lockedBuffer
	reg := prometheus.NewRegistry()
	s, err := redis.Open(context.Background(), srv.URL, redis.Options{CheckInterval: -1, Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	node := strings.TrimPrefix(srv.URL, "redis://")
	restarts := func(empty string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "rlctl_redis_node_restarts_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["node"] == node && labels["empty"] == empty {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}

	s.Inspect(t.Context())
	if n := restarts("true"); n != 0 {
		t.Fatalf("restarts before any restart: %v", n)
	}
	srv.Restart(t)
	s.Inspect(t.Context())
	if n := restarts("true"); n != 1 {
		t.Errorf("rlctl_redis_node_restarts_total{empty=\"true\"} = %v after one restart without persistence, want 1", n)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "restarted empty") || !strings.Contains(log.String(), node) {
		t.Errorf("no WARN line saying %s restarted empty:\n%s", node, log.String())
	}
	s.Inspect(t.Context())
	if n := restarts("true"); n != 1 {
		t.Errorf("a second check without a restart counted one: %v", n)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("the store does not reach the restarted server: %v", err)
	}
}
