package redis_test

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// TestSentinel runs on a throwaway set of a master, a replica and three
// sentinels (scripts/redisdev.sh scratch-sentinel): a redis+sentinel://
// URL opens a store on the master the sentinels name, which passes the
// conformance suite and the fail-policy checks like a standalone server,
// and a URL whose scheme does not match what the server is, or whose
// master name no sentinel monitors, is refused at Open with a
// *ModeError naming the scheme (or the name) to use.
func TestSentinel(t *testing.T) {
	_, sentinelURL := scratch(t, "sentinel")
	su, err := url.Parse(sentinelURL)
	if err != nil {
		t.Fatal(err)
	}
	sentinels := strings.Split(su.Host, ",")
	open := func(t *testing.T) enforce.CounterStore {
		s, err := redis.Open(context.Background(), sentinelURL, redis.Options{Prefix: "t" + randomHex() + ":"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}

	t.Run("open", func(t *testing.T) {
		t.Parallel()
		s := open(t).(*redis.Store)
		if got := s.BackendName(); got != "redis-sentinel" {
			t.Errorf("BackendName() = %q, want redis-sentinel", got)
		}
		if got := s.Sentinel(); got != "rlctl" {
			t.Errorf("Sentinel() = %q, want the master set rlctl", got)
		}
		if s.Cluster() {
			t.Error("Cluster() = true for a Sentinel URL")
		}
		if err := s.Ping(context.Background()); err != nil {
			t.Errorf("Ping through the sentinels' master: %v", err)
		}
	})

	t.Run("mismatched schemes", func(t *testing.T) {
		t.Parallel()
		standalone, err := url.Parse(redistest.URL(t, "REDIS_URL"))
		if err != nil {
			t.Fatal(err)
		}
		cluster, err := url.Parse(redistest.URL(t, "REDIS_CLUSTER_URL"))
		if err != nil {
			t.Fatal(err)
		}
		node := strings.Split(cluster.Host, ",")[0]
		for _, c := range []struct {
			name, url string
			want      []string
		}{
			{"redis:// at a sentinel", "redis://" + sentinels[0], []string{"redis_mode:sentinel", "use redis+sentinel://" + sentinels[0] + "/<master-name>"}},
			{"redis+sentinel:// at a standalone server", "redis+sentinel://" + standalone.Host + "/rlctl",
				[]string{"redis_mode:standalone", "use redis://" + standalone.Host}},
			{"redis+sentinel:// at a cluster node", "redis+sentinel://" + node + "/rlctl", []string{"redis_mode:cluster", "use redis+cluster://" + node}},
			{"redis+cluster:// at a sentinel", "redis+cluster://" + sentinels[0], []string{"redis_mode:sentinel", "use redis+sentinel://" + sentinels[0] + "/<master-name>"}},
			{"a master name no sentinel monitors", "redis+sentinel://" + su.Host + "/nosuchmaster", []string{`no master named "nosuchmaster"`}},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				s, err := redis.Open(context.Background(), c.url, redis.Options{CheckInterval: -1})
				if err == nil {
					s.Close()
					t.Fatalf("Open(%s) succeeded", c.url)
				}
				var me *redis.ModeError
				if !errors.As(err, &me) {
					t.Fatalf("Open(%s): %v, want a *ModeError", c.url, err)
				}
				for _, want := range c.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Open's error %q does not say %q", err, want)
					}
				}
			})
		}
	})

	t.Run("the db of the URL", func(t *testing.T) {
		t.Parallel()
		prefix := "db" + randomHex() + ":"
		s, err := redis.Open(context.Background(), sentinelURL+"/3", redis.Options{Prefix: prefix, CheckInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		gate := enforce.CounterGate{Key: "db", Window: time.Hour, Limit: 3, Enforce: true}
		if _, err := s.Take(context.Background(), []enforce.TakeRequest{{Gates: []enforce.CounterGate{gate}, Cost: 1, Consume: true, Now: time.Now()}}, time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		master := slices.Collect(maps.Keys(s.Client().Nodes()))[0]
		for db, want := range map[int]int{0: 0, 3: 1} {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{master}, SelectDB: db, ForceSingleClient: true, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			keys, err := c.Do(context.Background(), c.B().Keys().Pattern(prefix+"*").Build()).AsStrSlice()
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != want {
				t.Errorf("db %d of the master holds %d keys of the store, want %d (the URL names db 3)", db, len(keys), want)
			}
		}
	})

	t.Run("a sentinel down is passed over", func(t *testing.T) {
		t.Parallel()
		// A listener that refuses: the first sentinel of the URL is down.
		down := "127.0.0.1:1"
		u := "redis+sentinel://" + down + "," + su.Host + "/rlctl"
		s, err := redis.Open(context.Background(), u, redis.Options{CheckInterval: -1})
		if err != nil {
			t.Fatalf("Open with one sentinel of four down: %v", err)
		}
		s.Close()
		_, err = redis.Open(context.Background(), "redis+sentinel://"+down+"/rlctl", redis.Options{CheckInterval: -1})
		if err == nil || !strings.Contains(err.Error(), "no sentinel") || !strings.Contains(err.Error(), down) {
			t.Errorf("Open with every sentinel down: %v, want an error saying no sentinel answered, naming %s", err, down)
		}
	})

	t.Run("conformance", func(t *testing.T) {
		t.Parallel()
		enforcetest.TestCounterStore(t, open)
	})
	t.Run("fail policies", func(t *testing.T) {
		t.Parallel()
		enforcetest.TestFailPolicies(t, open, enforcetest.Build)
	})
	t.Run("counter admin", func(t *testing.T) {
		enforcetest.TestCounterAdmin(t, func(t *testing.T) enforcetest.AdminStore { return open(t).(*redis.Store) })
	})
}

// TestSentinelFailover kills the master of a throwaway sentinel set
// (SIGKILL of the pid it wrote: no shutdown, no last write to the
// replica) while 16 goroutines decide calls through one Enforcer, half of
// them on fail_closed targets: while the sentinels fail over, every
// decision follows its definition's fail policy, and then the same Store,
// without a restart, counts exactly on the promoted replica
// (killUnderLoad), whose address it names and whose ping answers.
func TestSentinelFailover(t *testing.T) {
	dir, sentinelURL := scratch(t, "sentinel")
	addr := func(node string) string {
		port, err := os.ReadFile(filepath.Join(dir, node, "port"))
		if err != nil {
			t.Fatal(err)
		}
		return "127.0.0.1:" + strings.TrimSpace(string(port))
	}
	// Nodes is the one server the client talks to: rueidis' sentinel
	// client knows only the master.
	s := killUnderLoad(t, sentinelURL, func(t *testing.T, s *redis.Store) {
		if got := slices.Collect(maps.Keys(s.Client().Nodes())); !slices.Equal(got, []string{addr("master")}) {
			t.Fatalf("before the failover the store talks to %v, want the master %s", got, addr("master"))
		}
		killPidIn(t, filepath.Join(dir, "master"))
	})
	if got := slices.Collect(maps.Keys(s.Client().Nodes())); !slices.Equal(got, []string{addr("replica")}) {
		t.Errorf("after the failover the store talks to %v, want the promoted replica %s", got, addr("replica"))
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Errorf("Ping after the failover: %v", err)
	}
}
