// Package redistest gives tests the Redis servers make test starts
// (scripts/redisdev.sh): their URLs from the environment.
package redistest

import (
	"os"
	"testing"
)

// URL is the URL in the environment variable name: REDIS_URL (the
// standalone server) or REDIS_CLUSTER_URL (the cluster). Unset, the test is
// skipped, except under CI=true, where a missing Redis is a failure: CI
// must not pass by skipping.
func URL(t testing.TB, name string) string {
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
