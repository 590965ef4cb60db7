package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// serverURL is the URL in the environment variable name (REDIS_URL or
// REDIS_CLUSTER_URL, which make test sets from scripts/redisdev.sh). Unset,
// the test is skipped, except under CI=true, where a missing Redis is a
// failure: CI must not pass by skipping.
func serverURL(t testing.TB, name string) string {
	t.Helper()
	u := os.Getenv(name)
	if u == "" {
		msg := name + " is unset: run make test, or export " + name + "=$(scripts/redisdev.sh " +
			map[string]string{"REDIS_URL": "url", "REDIS_CLUSTER_URL": "cluster-url"}[name] + ")"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (CI=true: the Redis tests may not be skipped)")
		}
		t.Skip(msg)
	}
	return u
}

// targets are the servers every conformance check runs against.
var targets = []struct{ name, env string }{
	{"standalone", "REDIS_URL"},
	{"cluster", "REDIS_CLUSTER_URL"},
}

// openStore opens a Store on the server named by env with a prefix of its
// own, so that every test starts from empty counters on the shared
// servers (their keys expire on their own).
func openStore(t testing.TB, env string) *redis.Store {
	t.Helper()
	u := serverURL(t, env)
	s, err := redis.Open(context.Background(), u, redis.Options{Prefix: "t" + randomHex() + ":"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
