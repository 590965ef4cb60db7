// Package redistest gives tests the Redis servers make test starts
// (scripts/redisdev.sh): their URLs from the environment.
package redistest

import (
	"os"
	"testing"

	"github.com/rlctl/rlctl/internal/testenv"
)

// URL is the URL in the environment variable name: REDIS_URL (the
// standalone server) or REDIS_CLUSTER_URL (the cluster). Unset, the test
// fails under make test and CI=true, and is skipped otherwise
// (testenv.Missing).
func URL(t testing.TB, name string) string {
	t.Helper()
	u := os.Getenv(name)
	if u == "" {
		testenv.Missing(t, name+" is unset: run make test, or export "+name+"=$(scripts/redisdev.sh "+
			map[string]string{"REDIS_URL": "url", "REDIS_CLUSTER_URL": "cluster-url"}[name]+")")
	}
	return u
}
