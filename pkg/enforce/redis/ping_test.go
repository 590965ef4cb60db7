package redis_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// TestPing: Ping answers nil for the shared standalone server and the
// Cluster (cluster_state:ok), and an error within its context's deadline
// for a server that stopped answering.
func TestPing(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"REDIS_URL", "REDIS_CLUSTER_URL"} {
		s, err := redis.Open(context.Background(), redistest.URL(t, name), redis.Options{CheckInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Errorf("%s: Ping: %v", name, err)
		}
		s.Close()
	}

	srv := redistest.Start(t)
	s, err := redis.Open(context.Background(), srv.URL, redis.Options{CheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := s.Ping(ctx); err == nil {
		t.Error("Ping of a stopped server answered nil")
	}
	if err := srv.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping after the server resumed: %v", err)
	}
}
