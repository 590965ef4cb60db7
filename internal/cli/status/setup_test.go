package status

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/client"
)

// The counter store's line says what kind of Redis the replica counts
// in: a Cluster, or the master a Sentinel set names (with its master
// set), next to the address without credentials.
func TestSetupLinesNameTheRedisMode(t *testing.T) {
	for _, c := range []struct {
		cs   client.CounterStoreInfo
		want string
	}{
		{client.CounterStoreInfo{Backend: "redis", Address: "redis://h:6379", Reachable: true, LatencyMS: 0.5},
			"redis redis://h:6379 (reachable, 0.5 ms)"},
		{client.CounterStoreInfo{Backend: "redis", Cluster: true, Address: "redis+cluster://h:1,h:2", Reachable: true, LatencyMS: 1},
			"redis cluster redis+cluster://h:1,h:2 (reachable, 1.0 ms)"},
		{client.CounterStoreInfo{Backend: "redis", Sentinel: "rlctl", Address: "redis+sentinel://s:26379/rlctl", Error: "redis: ping: EOF"},
			"redis sentinel (master set rlctl) redis+sentinel://s:26379/rlctl (UNREACHABLE: redis: ping: EOF)"},
	} {
		lines := setupLines(&client.ServerInfo{CounterStore: c.cs})
		if got := lines[1][1]; lines[1][0] != "Counter store" || got != c.want {
			t.Errorf("counter store line %q, want %q", got, c.want)
		}
	}
}

// The fail policy's line says the default, the replica count the degraded
// mode divides limits by, and, loudly, that the replica is degraded now.
func TestSetupLinesSayTheFailPolicy(t *testing.T) {
	for _, c := range []struct {
		fp   client.FailPolicyInfo
		want string
	}{
		{client.FailPolicyInfo{Default: "open"}, "open"},
		{client.FailPolicyInfo{Default: "degrade", Replicas: 3}, "degrade, 3 replicas"},
		{client.FailPolicyInfo{Default: "closed", Replicas: 2, Degraded: true}, "closed, 2 replicas (DEGRADED: deciding on this replica's own counters)"},
	} {
		lines := setupLines(&client.ServerInfo{FailPolicy: c.fp})
		last := lines[len(lines)-1]
		if last[0] != "Fail policy" || last[1] != c.want {
			t.Errorf("fail policy line %q: %q, want %q", last[0], last[1], c.want)
		}
	}
}
