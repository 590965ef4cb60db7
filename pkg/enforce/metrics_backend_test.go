package enforce_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// customStore is a counter store of a gateway's own, naming no backend.
type customStore struct{ enforce.CounterStore }

func (customStore) BackendName() string { return "" }

// The round-trip histogram names its backend, so that a deployment with
// several (PostgreSQL for one gateway, Redis for another) can tell their
// latencies apart: a /metrics scrape of an Enforcer over each store finds
// rlctl_enforce_backend_duration_seconds{backend=...} with the store's
// name, and a store that names none by its Go type.
func TestBackendDurationNamesTheBackend(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		backend string
		open    func(t *testing.T) enforce.CounterStore
	}{
		{"memory", func(*testing.T) enforce.CounterStore { return memory.New() }},
		{"postgres", func(t *testing.T) enforce.CounterStore { return postgres.NewCounterStore(pgtest.NewStore(t).Pool()) }},
		{"redis", func(t *testing.T) enforce.CounterStore { return openRedis(t, "REDIS_URL") }},
		{"redis-cluster", func(t *testing.T) enforce.CounterStore { return openRedis(t, "REDIS_CLUSTER_URL") }},
		{"enforce_test.customStore", func(*testing.T) enforce.CounterStore { return customStore{memory.New()} }},
	} {
		t.Run(c.backend, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			src := enforcetest.StaticSource(enforce.State{Definitions: []ratelimit.Definition{target("mcp_server", "srv", 60, 5)}})
			e, err := enforce.New(context.Background(), enforce.Options{Counters: c.open(t), Source: src, Registerer: reg, SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Close)
			if _, err := e.Check(context.Background(), user("alice", "srv")); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
			t.Cleanup(srv.Close)
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := `rlctl_enforce_backend_duration_seconds_count{backend="` + c.backend + `",op="take",result="ok"} 1`
			if !strings.Contains(string(body), want) {
				t.Errorf("scrape lacks %s:\n%s", want, grepLines(string(body), "rlctl_enforce_backend_duration_seconds_count"))
			}
		})
	}
}

func openRedis(t *testing.T, env string) enforce.CounterStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := redis.Open(ctx, redistest.URL(t, env), redis.Options{Prefix: "rl:metrics-" + strings.ReplaceAll(t.Name(), "/", "-") + ":", CheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
