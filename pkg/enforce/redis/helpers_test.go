package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

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
	u := redistest.URL(t, env)
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
