package enforcement_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/status"
	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// replicas serves two rlapi replicas, each with its own pool and Enforcer,
// over one database, as two gateways would run.
func replicas(t *testing.T) (*apitest.Env, *apitest.Env) {
	t.Helper()
	dsn := pgtest.NewMigratedDatabase(t)
	var envs [2]*apitest.Env
	for i := range envs {
		st, err := store.Open(context.Background(), dsn, store.Opts{MaxConns: 6})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		envs[i] = apitest.StartOn(t, st, api.Config{})
	}
	return envs[0], envs[1]
}

func counted(t *testing.T, env *apitest.Env) int64 {
	t.Helper()
	var n int64
	if err := env.Store.Pool().QueryRow(context.Background(), `select coalesce(sum(count), 0) from rl_counters`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls check until it answers reason: the switch reaches each
// replica through LISTEN/NOTIFY, not through a reload the test asks for.
// The deadline only bounds a hang.
func waitFor(t *testing.T, name string, check func() client.CheckResult, reason string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := check()
		if got.Reason == reason {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %q, want %q", name, got.Reason, reason)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestMasterSwitchAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, b := replicas(t)
	h := clitest.New(t)
	h.Env, h.Token = a, a.AdminToken
	admin := h.Client()
	ctx := t.Context()

	// A used-up caller limit and a quarantined caller.
	if now := time.Now().Unix(); 3600-now%3600 < 60 {
		time.Sleep(time.Duration(3600-now%3600+1) * time.Second)
	}
	limit := 20
	if _, err := admin.PutDefinition(ctx, rl.Definition{Axis: rl.AxisCaller, EntityType: rl.EntityGroup, Name: "devs",
		WindowSeconds: 3600, UserMaxRequests: &limit, Enabled: true}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.PutMembership(ctx, rl.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"devs"}}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Quarantine(ctx, "user", "mallory", client.QuarantineRequest{Reason: "test"}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	gw := a.Token(t, "gateway", "enforcer")
	checker := func(env *apitest.Env, user string) func() client.CheckResult {
		c, err := client.New(env.URL, client.Options{Token: gw})
		if err != nil {
			t.Fatal(err)
		}
		return func() client.CheckResult {
			r, err := c.Check(ctx, client.CheckRequest{Username: user, TargetType: "mcp_server", TargetName: "srv"})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	aliceA, aliceB, malloryB := checker(a, "alice"), checker(b, "alice"), checker(b, "mallory")
	for _, env := range []*apitest.Env{a, b} {
		if err := env.Enforcer.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := range limit {
		check := aliceA
		if i%2 == 1 {
			check = aliceB
		}
		if r := check(); !r.Allowed {
			t.Fatalf("call %d under the limit: %+v", i+1, r)
		}
	}
	for name, check := range map[string]func() client.CheckResult{"replica a": aliceA, "replica b": aliceB} {
		if r := check(); r.Allowed || r.Reason != client.ReasonThrottled {
			t.Fatalf("%s: used-up caller: %+v, want throttled", name, r)
		}
	}
	if r := malloryB(); r.Reason != client.ReasonQuarantined {
		t.Fatalf("quarantined caller: %+v", r)
	}
	before := counted(t, a)

	// Off, from the CLI: refused without --yes off a terminal, then done.
	if r := h.Run("enforcement", "off", "--reason", "INC-42"); r.Code != cmdutil.ExitUsage || !strings.Contains(r.ErrOut, "--yes") {
		t.Errorf("off without --yes: exit %d, %s", r.Code, r.ErrOut)
	}
	if r := h.Run("enforcement", "off", "--yes"); r.Code != cmdutil.ExitUsage || !strings.Contains(r.ErrOut, "--reason is required") {
		t.Errorf("off without --reason: exit %d, %s", r.Code, r.ErrOut)
	}
	switched := time.Now()
	r := h.Run("enforcement", "off", "--reason", "INC-42: counter store overloaded", "--yes")
	if r.Code != 0 || !strings.Contains(r.Out, "Enforcement: OFF") || !strings.Contains(r.ErrOut, "counts nothing") {
		t.Fatalf("enforcement off: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	waitFor(t, "replica a", aliceA, client.ReasonEnforcementOff)
	waitFor(t, "replica b", aliceB, client.ReasonEnforcementOff)
	// Reported, not asserted (docs/performance.md records it).
	t.Logf("the switch reached both replicas %v after rlctl enforcement off started", time.Since(switched).Round(time.Millisecond))
	for range 5 {
		for name, check := range map[string]func() client.CheckResult{"alice on a": aliceA, "alice on b": aliceB, "mallory on b": malloryB} {
			if r := check(); !r.Allowed || r.Reason != client.ReasonEnforcementOff || len(r.Gates) != 0 {
				t.Errorf("%s while off: %+v, want allowed (enforcement-off)", name, r)
			}
		}
	}
	if after := counted(t, a); after != before {
		t.Errorf("counters went from %d to %d while enforcement was off, want unchanged", before, after)
	}

	// Both replicas say so on /metrics.
	for name, env := range map[string]*apitest.Env{"a": a, "b": b} {
		if got := scrape(t, env, "rlctl_enforce_enabled"); got != "0" {
			t.Errorf("replica %s: rlctl_enforce_enabled = %q, want 0", name, got)
		}
	}

	// The audit log has it, with the actor and the reason.
	page, err := admin.ListAudit(ctx, client.AuditFilter{Resource: "enforcement"})
	if err != nil || len(page.Entries) != 1 {
		t.Fatalf("audit: %+v, %v", page.Entries, err)
	}
	if e := page.Entries[0]; e.Action != "disable" || e.Actor != "test-admin" || !strings.Contains(string(e.After), "INC-42") ||
		!strings.Contains(string(e.Before), `"enabled":true`) {
		t.Errorf("audit entry: %+v (after %s)", e, e.After)
	}
	if r := h.Run("audit", "list", "--resource", "enforcement"); r.Code != 0 || !strings.Contains(r.Out, "disable") {
		t.Errorf("rlctl audit list: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}

	// rlctl status, through the other replica, shows it.
	hb := clitest.New(t)
	hb.Env, hb.Token = b, b.AdminToken
	r = hb.Run("status")
	if r.Code != 0 || !strings.Contains(r.Out, "Enforcement:         OFF: every call allowed, nothing counted") || !strings.Contains(r.Out, "INC-42") {
		t.Errorf("status while off: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	var st status.Status
	if r = hb.Run("status", "-o", "json"); json.Unmarshal([]byte(r.Out), &st) != nil || st.Enforcement == nil || st.Enforcement.Enabled {
		t.Errorf("status -o json while off: %s", r.Out)
	}
	if r = hb.Run("enforcement", "status", "-o", "json"); !strings.Contains(r.Out, `"enabled": false`) {
		t.Errorf("enforcement status -o json: %s", r.Out)
	}

	// Back on: throttling and quarantine again, on both replicas.
	if r = h.Run("enforcement", "on", "--reason", "fixed"); r.Code != 0 || !strings.Contains(r.Out, "Enforcement: on") {
		t.Fatalf("enforcement on: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
	waitFor(t, "replica a", aliceA, client.ReasonThrottled)
	waitFor(t, "replica b", aliceB, client.ReasonThrottled)
	if r := malloryB(); r.Allowed || r.Reason != client.ReasonQuarantined {
		t.Errorf("quarantine after on: %+v", r)
	}
	if got := scrape(t, b, "rlctl_enforce_enabled"); got != "1" {
		t.Errorf("rlctl_enforce_enabled after on = %q, want 1", got)
	}
	if r = hb.Run("status"); !strings.Contains(r.Out, "Enforcement:         on\n") {
		t.Errorf("status after on:\n%s", r.Out)
	}
}

// scrape returns the value of an unlabelled series on env's /metrics.
func scrape(t *testing.T, env *apitest.Env, name string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+env.AdminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

func TestFlags(t *testing.T) {
	t.Parallel()
	h := clitest.New(t)
	for _, args := range [][]string{{"enforcement", "on", "x"}, {"enforcement", "status", "x"}, {"enforcement", "off", "--yes"}} {
		if r := h.Run(args...); r.Code != cmdutil.ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, r.Code, r.ErrOut)
		}
	}
}
