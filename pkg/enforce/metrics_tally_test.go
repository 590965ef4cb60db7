package enforce_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/enforcetest"
	"github.com/rlctl/rlctl/pkg/enforce/memory"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The decision path's counters (allowed checks, snapshot hits, gate checks)
// are kept per goroutine and added to their series at scrape time: a scrape
// still reads every decision made before it, from many goroutines at once,
// and the next scrape adds only what came since.
func TestDecisionCountersExactAtEveryScrape(t *testing.T) {
	t.Parallel()
	high, low := 1_000_000, 100
	user := ratelimit.Definition{Axis: ratelimit.AxisCaller, EntityType: ratelimit.EntityGroup, Name: "all",
		WindowSeconds: 3600, UserMaxRequests: &high, Enabled: true, Mode: ratelimit.ModeEnforce, Everyone: true}
	ctg := user
	ctg.Axis = ratelimit.AxisCallerTarget
	tgt := ratelimit.Definition{Axis: ratelimit.AxisTarget, EntityType: ratelimit.EntityMCPServer, Name: "s",
		WindowSeconds: 3600, MaxRequests: &low, Enabled: true, Mode: ratelimit.ModeEnforce}
	defs := []ratelimit.Definition{user, ctg, tgt}
	for i := range defs {
		defs[i].ID = defs[i].Key()
	}
	reg := prometheus.NewRegistry()
	e, err := enforce.New(context.Background(), enforce.Options{Counters: memory.New(), Registerer: reg, SweepInterval: -1,
		BackendTimeout: 10 * time.Second,
		Source:         enforcetest.StaticSource(enforce.State{Definitions: append(enforcetest.Sentinels(), defs...)})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	call := enforce.Call{Username: "alice", TargetType: ratelimit.EntityMCPServer, TargetName: "s"}
	check := func(goroutines, each int) {
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range each {
					if _, err := e.Check(context.Background(), call); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	want := func(name string, w ...string) {
		t.Helper()
		if got := series(t, reg, name); strings.Join(got, "; ") != strings.Join(w, "; ") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, w)
		}
	}
	n := 0
	for _, round := range []struct{ goroutines, each int }{{16, 5}, {32, 20}, {1, 1}, {64, 10}} {
		check(round.goroutines, round.each)
		n += round.goroutines * round.each
		allowed, throttled := min(n, low), max(n-low, 0)
		outcomes := []string{"outcome=allowed " + strconv.Itoa(allowed)}
		if throttled > 0 {
			outcomes = append(outcomes, "outcome=throttled "+strconv.Itoa(throttled))
		}
		want("rlctl_enforce_checks_total", outcomes...)
		want("rlctl_enforce_cache_total", "result=hit "+strconv.Itoa(n))
		want("rlctl_enforce_gate_checks_total",
			"axis=clr,entity_type=group,outcome=allow "+strconv.Itoa(n), "axis=clr,entity_type=group,outcome=deny 0",
			"axis=ctg,entity_type=group,outcome=allow "+strconv.Itoa(n), "axis=ctg,entity_type=group,outcome=deny 0",
			"axis=tgt,entity_type=mcp_server,outcome=allow "+strconv.Itoa(allowed),
			"axis=tgt,entity_type=mcp_server,outcome=deny "+strconv.Itoa(throttled))
		// A second scrape with no decision between reads the same.
		want("rlctl_enforce_checks_total", outcomes...)
	}
}
