package redis_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// TestOpenRefusesAMismatchedScheme: a redis:// URL at a node of a Redis
// Cluster, or a redis+cluster:// URL at a standalone server, is refused
// at Open with a *ModeError whose message names the server and the
// scheme to use, instead of starting and failing decisions later
// (CROSSSLOT) or running on one node of what the URL calls a cluster.
func TestOpenRefusesAMismatchedScheme(t *testing.T) {
	t.Parallel()
	clusterURL := redistest.URL(t, "REDIS_CLUSTER_URL")
	standaloneURL := redistest.URL(t, "REDIS_URL")
	cu, err := url.Parse(clusterURL)
	if err != nil {
		t.Fatal(err)
	}
	node := strings.Split(cu.Host, ",")[0]
	su, err := url.Parse(standaloneURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, url string
		cluster   bool
		want      []string
	}{
		{"redis:// at a cluster node", "redis://" + node, true, []string{node, "cluster_enabled:1", "redis+cluster://" + node}},
		{"redis+cluster:// at a standalone server", "redis+cluster://" + su.Host, false, []string{su.Host, "cluster_enabled:0", "redis://" + su.Host}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := redis.Open(context.Background(), c.url, redis.Options{CheckInterval: -1})
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) succeeded", c.url)
			}
			var me *redis.ModeError
			if !errors.As(err, &me) || me.ClusterEnabled != c.cluster {
				t.Fatalf("Open(%s): %v, want a *ModeError with ClusterEnabled %v", c.url, err, c.cluster)
			}
			for _, want := range c.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Open's error %q does not say %q", err, want)
				}
			}
		})
	}
	// The matching schemes open.
	for _, u := range []string{clusterURL, standaloneURL} {
		s, err := redis.Open(context.Background(), u, redis.Options{CheckInterval: -1})
		if err != nil {
			t.Errorf("Open(%s): %v", redis.Redact(u), err)
			continue
		}
		s.Close()
	}
}
