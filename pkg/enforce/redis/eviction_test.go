package redis_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// TestOpenRefusesAnEvictingPolicy: a server whose maxmemory-policy may
// evict counters (every policy but noeviction: the volatile ones evict
// exactly the keys with a TTL, which every counter has) is refused by
// Open with an error naming the node, its policy and the command that
// fixes it, also where CONFIG is disabled (as on managed Redis: the
// policy is read from INFO); noeviction is opened.
func TestOpenRefusesAnEvictingPolicy(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		args   []string
		policy string // "": opened
	}{
		{"allkeys-lru", []string{"--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"}, "allkeys-lru"},
		{"volatile-lru", []string{"--maxmemory", "2mb", "--maxmemory-policy", "volatile-lru"}, "volatile-lru"},
		{"allkeys-lru without CONFIG", []string{"--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", ""}, "allkeys-lru"},
		{"noeviction", []string{"--maxmemory", "2mb", "--maxmemory-policy", "noeviction"}, ""},
		{"noeviction without CONFIG", []string{"--maxmemory-policy", "noeviction", "--rename-command", "CONFIG", ""}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, c.args...)
			if strings.HasSuffix(c.name, "without CONFIG") {
				// The policy can only come from INFO.
				co, _, err := redis.ParseURL(srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := rueidis.NewClient(co)
				if err != nil {
					t.Fatal(err)
				}
				err = raw.Do(context.Background(), raw.B().ConfigGet().Parameter("maxmemory-policy").Build()).Error()
				raw.Close()
				if err == nil {
					t.Fatal("CONFIG GET answered on a server started without CONFIG")
				}
			}
			s, err := redis.Open(context.Background(), srv.URL, redis.Options{CheckInterval: -1})
			if c.policy == "" {
				if err != nil {
					t.Fatalf("Open on a noeviction server: %v", err)
				}
				s.Close()
				return
			}
			if err == nil {
				s.Close()
				t.Fatalf("Open on a server with maxmemory-policy %s succeeded", c.policy)
			}
			var ev *redis.EvictionError
			if !errors.As(err, &ev) || len(ev.Nodes) != 1 || ev.Nodes[0].Policy != c.policy {
				t.Fatalf("Open: %v, want an *EvictionError naming the node's policy %s", err, c.policy)
			}
			addr := strings.TrimPrefix(srv.URL, "redis://")
			for _, want := range []string{addr, "maxmemory-policy " + c.policy, "CONFIG SET maxmemory-policy noeviction"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open's error %q does not say %q", err, want)
				}
			}
		})
	}
}

// TestEvictionIsWarnedAndExported: with AllowEviction, Open on an
// allkeys-lru server succeeds, logs one warning naming the policy, and
// the metrics say so (rlctl_redis_eviction_safe 0, the policy as a
// label); keys the server evicts show in rlctl_redis_evicted_keys and in
// a warning. The periodic inspection follows the policy as it changes
// (CONFIG SET, no restart), warning once per change, not once per check.
func TestEvictionIsWarnedAndExported(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t, "--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru")
	ctx := context.Background()
	// The log goes to a file: the store's watch writes it while the test
	// reads it.
	logFile, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	logs := func() string { b, _ := os.ReadFile(logFile.Name()); return string(b) }
	reg := prometheus.NewRegistry()
	s, err := redis.Open(ctx, srv.URL, redis.Options{AllowEviction: true, Registerer: reg,
		CheckInterval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logFile, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	addr := strings.TrimPrefix(srv.URL, "redis://")
	if got := gauge(t, reg, "rlctl_redis_eviction_safe", nil); got != 0 {
		t.Errorf("rlctl_redis_eviction_safe = %v on an allkeys-lru server, want 0", got)
	}
	if got := gauge(t, reg, "rlctl_redis_maxmemory_policy", map[string]string{"node": addr, "policy": "allkeys-lru"}); got != 1 {
		t.Errorf("rlctl_redis_maxmemory_policy{node=%q,policy=\"allkeys-lru\"} = %v, want 1", addr, got)
	}
	if got := gauge(t, reg, "rlctl_redis_evicted_keys", map[string]string{"node": addr}); got != 0 {
		t.Errorf("rlctl_redis_evicted_keys = %v before anything was written, want 0", got)
	}
	if n := strings.Count(logs(), "may evict counters"); n != 1 {
		t.Errorf("%d warnings that the node may evict, want 1:\n%s", n, logs())
	}

	// Fill the server past its 2 MB: it evicts.
	c := s.Client()
	big := strings.Repeat("x", 64<<10)
	for i := range 64 {
		if err := c.Do(ctx, c.B().Set().Key("fill:"+strconv.Itoa(i)).Value(big).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "rlctl_redis_evicted_keys to rise", func() bool {
		return gauge(t, reg, "rlctl_redis_evicted_keys", map[string]string{"node": addr}) > 0
	})
	waitFor(t, "a warning that keys were evicted", func() bool { return strings.Contains(logs(), "evicted keys since the last check") })

	// Repaired while running: the next inspections see it, and say so once.
	if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("maxmemory-policy", "noeviction").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rlctl_redis_eviction_safe to become 1", func() bool { return gauge(t, reg, "rlctl_redis_eviction_safe", nil) == 1 })
	// And broken again: one more warning, however many checks run.
	if err := c.Do(ctx, c.B().ConfigSet().ParameterValue().ParameterValue("maxmemory-policy", "volatile-ttl").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rlctl_redis_eviction_safe to become 0", func() bool { return gauge(t, reg, "rlctl_redis_eviction_safe", nil) == 0 })
	for range 3 {
		s.Inspect(ctx)
	}
	if n := strings.Count(logs(), "may evict counters"); n != 2 {
		t.Errorf("%d warnings that the node may evict after allkeys-lru, noeviction, volatile-ttl and more checks, want 2 (one per change):\n%s", n, logs())
	}
	if n := strings.Count(logs(), "no longer evicts"); n != 1 {
		t.Errorf("%d notices that the node no longer evicts, want 1:\n%s", n, logs())
	}
}

// gauge is the value of the series name with labels in reg (the test
// fails if there is none).
func gauge(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labels)
	return 0
}
