package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/postgres"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestChangeThroughAPIReachesARunningEnforcer: a quarantine and a limit
// made through rlapi are enforced by an Enforcer (here another replica on
// its own pool) within a second, without waiting for the cache TTL.
func TestChangeThroughAPIReachesARunningEnforcer(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	replica, err := postgres.Open(ctx, env.Store.Pool().Config().ConnString(), enforce.Options{CacheTTL: time.Hour, SweepInterval: -1, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	call := enforce.Call{ClientID: "bot", TargetType: "mcp_server", TargetName: "mcpgw"}
	waitFor := func(what string, ok func(enforce.Decision) bool) {
		t.Helper()
		start := time.Now()
		for {
			d, _ := replica.Peek(ctx, call)
			if ok(d) {
				t.Logf("%s enforced %v after the API answered", what, time.Since(start).Round(time.Millisecond))
				return
			}
			if time.Since(start) > time.Second {
				t.Fatalf("%s not enforced a second after the API answered (last decision %+v)", what, d)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if _, err := c.Quarantine(ctx, "client", "bot", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("quarantine", func(d enforce.Decision) bool { return d.Reason == enforce.ReasonQuarantined })
	if _, _, err := c.Unquarantine(ctx, "client", "bot", client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("release", func(d enforce.Decision) bool { return d.Allowed })
	limit := 7
	if _, err := c.PutDefinition(ctx, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "mcpgw",
		WindowSeconds: 60, MaxRequests: &limit, Enabled: true}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("new limit", func(d enforce.Decision) bool { return d.Limit == 7 })
}
