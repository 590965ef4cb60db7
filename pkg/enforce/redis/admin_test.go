package redis_test

import (
	"testing"

	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
)

// The Redis store lists and resets its counters by caller, target and
// definition, on a standalone server and across a cluster's masters.
func TestCounterAdmin(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			redistest.URL(t, tg.env)
			enforcetest.TestCounterAdmin(t, func(t *testing.T) enforcetest.AdminStore { return openStore(t, tg.env) })
		})
	}
}
