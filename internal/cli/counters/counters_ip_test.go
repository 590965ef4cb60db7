package counters_test

import (
	"context"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// An anonymous caller's counters (ip:<address>) are shown with their
// window by `counters get --caller ip:...` and removed by `counters reset`
// with that selector, against a real rlapi.
func TestCountersOfIPCallers(t *testing.T) {
	h := clitest.StartParallel(t)
	ctx := context.Background()
	c := h.Client()
	limit := 100
	if _, err := c.PutDefinition(ctx, rl.Definition{Axis: "caller", EntityType: "group", Name: "anonymous", WindowSeconds: 60, UserMaxRequests: &limit, Enabled: true},
		client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutMembership(ctx, rl.Membership{SubjectType: rl.SubjectNetwork, Subject: "2001:db8::/32", Groups: []string{"anonymous"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := h.Env.Enforcer.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2::99"} { // one /64
		if d, err := h.Env.Enforcer.Check(ctx, enforce.Call{TargetType: "mcp_server", TargetName: "mcpgw", ClientIP: ip}); err != nil || !d.Allowed {
			t.Fatalf("check from %s = %+v, %v", ip, d, err)
		}
	}
	if got := counts(h, "--caller", "ip:2001:db8:1:2::/64"); !sameCounts(got, map[string]int64{"c|60|ip:2001:db8:1:2::/64": 2}) {
		t.Errorf("ip:2001:db8:1:2::/64 = %v", got)
	}
	header, row, _ := strings.Cut(strings.TrimSpace(h.Must("counters", "get", "--caller", "ip:2001:db8:1:2::/64")), "\n")
	if piped := strings.Split(row, "\t"); header != "KEY\tWINDOW\tWINDOW-START\tCOUNT\tEXPIRES" || len(piped) != 5 ||
		piped[0] != "c|60|ip:2001:db8:1:2::/64" || piped[1] != "60s" || piped[2] == "" || piped[3] != "2" {
		t.Errorf("piped: %q then %q, want the bucket with its 60 s window", header, row)
	}
	if out := h.Must("counters", "reset", "--caller", "ip:2001:db8:1:2::/64", "--yes"); out != "caller ip:2001:db8:1:2::/64: 1 counter reset\n" {
		t.Errorf("reset = %q", out)
	}
	if got := counts(h, "--caller", "ip:2001:db8:1:2::/64"); len(got) != 0 {
		t.Errorf("after the reset = %v", got)
	}
	// An IPv6 address names no bucket: refused, naming the rule.
	if r := h.Run("counters", "get", "--caller", "ip:2001:db8:1:2::1"); r.Code == 0 || !strings.Contains(r.ErrOut, "an IPv6 caller is its network") {
		t.Errorf("--caller ip:2001:db8:1:2::1: exit %d, stderr %q", r.Code, r.ErrOut)
	}
}
