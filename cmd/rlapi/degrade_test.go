package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/pgtest"
	"github.com/rlctl/rlctl/internal/redistest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/httpgate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// TestServeRefusesBadFailPolicies: a fail policy rlapi cannot apply is a
// usage error (exit 2) naming the flag: degrade without a replica count,
// an unknown policy, --fail-closed beside another policy, and --replicas
// and --lease-replicas that disagree.
func TestServeRefusesBadFailPolicies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		vars map[string]string
		args []string
		want string
	}{
		{map[string]string{"RLAPI_FAIL_POLICY": "degrade"}, nil, "--replicas"},
		{nil, []string{"--fail-policy", "degrade"}, "--replicas (RLAPI_REPLICAS)"},
		{nil, []string{"--fail-policy", "sometimes"}, "--fail-policy (RLAPI_FAIL_POLICY)"},
		{nil, []string{"--fail-closed", "--fail-policy", "open"}, "--fail-closed (RLAPI_FAIL_CLOSED) and --fail-policy open"},
		{nil, []string{"--replicas", "2", "--lease-replicas", "3"}, "--replicas 2 (RLAPI_REPLICAS) and --lease-replicas 3"},
		{map[string]string{"RLAPI_REPLICAS": "-1"}, nil, "--replicas (RLAPI_REPLICAS)"},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"serve"}, c.args...), env(c.vars), &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v %v: exit %d, %q; want a usage error (2) saying %q", c.vars, c.args, code, errOut.String(), c.want)
		}
	}
}

// TestServeDegradesWhenRedisIsGone: a real rlapi with --fail-policy
// degrade and --replicas 2, counting in a Redis of the test's own that is
// killed: POST /api/check then answers on this replica's share of the
// limit (2 of 4), with "degraded": true in its JSON, through the SDK's
// CheckResult and the X-RateLimit-Degraded header, and GET /api/server
// says the policy, the replica count and that the replica is degraded.
func TestServeDegradesWhenRedisIsGone(t *testing.T) {
	t.Parallel()
	rs := redistest.Start(t)
	dsn := pgtest.NewMigratedDatabase(t)
	four := 4
	srv := serveWith(t, dsn, ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "deg", WindowSeconds: 3600,
		MaxRequests: &four, Enabled: true, Mode: ratelimit.ModeEnforce},
		map[string]string{"RLAPI_COUNTERS_URL": rs.URL, "RLAPI_FAIL_POLICY": "degrade", "RLAPI_REPLICAS": "2", "RLAPI_BACKEND_TIMEOUT": "200ms"})
	sdk, err := client.New("http://"+srv.addr, client.Options{Token: srv.token})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	call := client.CheckRequest{Username: "alice", TargetType: "mcp_server", TargetName: "deg"}
	info, err := sdk.ServerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (client.FailPolicyInfo{Default: "degrade", Replicas: 2}); info.FailPolicy != want {
		t.Errorf("fail policy with Redis up: %+v, want %+v", info.FailPolicy, want)
	}
	if res, err := sdk.Check(ctx, call); err != nil || !res.Allowed || res.Degraded || res.Limit != 4 {
		t.Fatalf("with Redis up: %+v, %v; want allowed on the shared counters, limit 4", res, err)
	}

	if err := rs.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = rs.Process.Wait()
	for i := range 2 {
		res, err := sdk.Check(ctx, call)
		if err != nil || !res.Allowed || !res.Degraded || res.Limit != 2 || res.Reason != "allowed" {
			t.Errorf("call %d with Redis gone: %+v, %v; want allowed, degraded, on the share 2 of 4", i+1, res, err)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+srv.addr+"/api/check",
		strings.NewReader(`{"username": "alice", "target_type": "mcp_server", "target_name": "deg"}`))
	req.Header.Set("Authorization", "Bearer "+srv.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(body.String(), `"degraded":true`) ||
		!strings.Contains(body.String(), `"reason":"throttled"`) || resp.Header.Get(httpgate.HeaderDegraded) != "1" {
		t.Errorf("the third call with Redis gone: %d %s, %s: %q; want a throttled decision, degraded in the JSON and the header",
			resp.StatusCode, body.String(), httpgate.HeaderDegraded, resp.Header.Get(httpgate.HeaderDegraded))
	}
	info, err = sdk.ServerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (client.FailPolicyInfo{Default: "degrade", Replicas: 2, Degraded: true}); info.FailPolicy != want {
		t.Errorf("fail policy with Redis gone: %+v, want %+v", info.FailPolicy, want)
	}

	// /metrics counts what the replica decided on its own: the two
	// allowed and the one throttled, says it is degraded now, and labels
	// the failed round trips with the backend.
	req, _ = http.NewRequestWithContext(ctx, "GET", "http://"+srv.addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+srv.token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body.Reset()
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"\nrlctl_enforce_degraded 1\n",
		"\nrlctl_enforce_degraded_decisions_total{outcome=\"allowed\"} 2\n",
		"\nrlctl_enforce_degraded_decisions_total{outcome=\"throttled\"} 1\n",
	} {
		if !strings.Contains(body.String(), want) {
			t.Errorf("/metrics (%d) lacks %q:\n%s", resp.StatusCode, strings.TrimSpace(want), grepLines(body.String(), "rlctl_enforce_degraded"))
		}
	}
	// A refused connection is an error, a hung one a timeout.
	failed := `rlctl_enforce_backend_duration_seconds_count{backend="redis",op="take",result="`
	if !strings.Contains(body.String(), failed+`error"}`) && !strings.Contains(body.String(), failed+`timeout"}`) {
		t.Errorf("/metrics counts no failed round trip to redis:\n%s", grepLines(body.String(), "rlctl_enforce_backend_duration_seconds_count"))
	}
}
