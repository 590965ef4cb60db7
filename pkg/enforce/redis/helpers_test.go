package redis_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/redis"
)

// targets are the servers every conformance check runs against.
var targets = []struct{ name, env string }{
	{"standalone", "REDIS_URL"},
	{"cluster", "REDIS_CLUSTER_URL"},
}

// onEachTarget runs check once per target (standalone, cluster) as a
// subtest, with a constructor of fresh Stores on that target: how the
// suite's checks run over Redis.
func onEachTarget(t *testing.T, check func(t *testing.T, newStore func(t *testing.T) enforce.CounterStore)) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			check(t, func(t *testing.T) enforce.CounterStore { return openStore(t, tg.env) })
		})
	}
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
