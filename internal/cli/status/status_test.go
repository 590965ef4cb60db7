package status_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/internal/cli"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/iostreams"
	"github.com/rlctl/rlctl/internal/cli/status"
	"github.com/rlctl/rlctl/internal/version"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

type harness struct {
	t      *testing.T
	env    *apitest.Env
	config string
}

func start(t *testing.T) *harness {
	t.Helper()
	t.Parallel()
	return &harness{t: t, env: apitest.Start(t, api.Config{}), config: filepath.Join(t.TempDir(), "config.yaml")}
}

type result struct {
	code        int
	out, errOut string
}

// run runs a bare command line (no --server or --token added).
func (h *harness) run(args ...string) result {
	h.t.Helper()
	ios, _, out, errOut := iostreams.Test()
	getenv := func(k string) string {
		if k == "RLCTL_CONFIG" {
			return h.config
		}
		return ""
	}
	code := cli.Run(context.Background(), args, ios, getenv)
	return result{code, out.String(), errOut.String()}
}

func (h *harness) as(tok string, args ...string) result {
	h.t.Helper()
	return h.run(append([]string{"--server", h.env.URL, "--token", tok}, args...)...)
}

func (h *harness) seed() {
	h.t.Helper()
	ctx := context.Background()
	c, err := client.New(h.env.URL, client.Options{Token: h.env.AdminToken})
	if err != nil {
		h.t.Fatal(err)
	}
	limit := 60
	for _, name := range []string{"developers", "batch"} {
		d := rl.Definition{Axis: rl.AxisCaller, EntityType: rl.EntityGroup, Name: name, WindowSeconds: 60, UserMaxRequests: &limit, Enabled: true}
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			h.t.Fatal(err)
		}
	}
	if _, err := c.PutMembership(ctx, rl.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"developers"}}, client.WriteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := c.Quarantine(ctx, "client", "leaky", client.QuarantineRequest{Reason: "leak"}, client.WriteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := c.PutAdmin(ctx, rl.Admin{SubjectType: "user", Subject: "root"}, client.WriteOptions{}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := c.CreateToken(ctx, client.CreateTokenRequest{Name: "revoked", Role: "viewer"}); err != nil {
		h.t.Fatal(err)
	}
	if err := c.RevokeToken(ctx, "revoked"); err != nil {
		h.t.Fatal(err)
	}
}

func intp(n int) *int { return &n }

func TestStatusAsAdmin(t *testing.T) {
	h := start(t)
	h.seed()

	r := h.as(h.env.AdminToken, "status", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var got status.Status
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Server != h.env.URL || got.Context != "" || got.ClientVersion != version.String() || got.ServerVersion == "" {
		t.Errorf("identity fields: %+v", got)
	}
	if !got.Ready || got.NotReadyReason != "" || got.Schema.Current == 0 || got.Schema.Current != got.Schema.Latest {
		t.Errorf("readiness and schema: %+v", got)
	}
	// Memberships: alice, and leaky's quarantine membership. Tokens: the
	// harness's admin token; the revoked one does not count.
	want := status.Counts{Definitions: intp(4), Memberships: intp(2), QuarantinedCallers: intp(1), QuarantinedTargets: intp(0), Admins: intp(1), LiveTokens: intp(1)}
	if !reflect.DeepEqual(got.Counts, want) {
		gc, _ := json.Marshal(got.Counts)
		wc, _ := json.Marshal(want)
		t.Errorf("counts: got %s, want %s", gc, wc)
	}

	r = h.as(h.env.AdminToken, "status")
	for _, line := range []string{"Server:              " + h.env.URL, "Context:             -", "Ready:               yes", "Definitions:         4", "Quarantined callers: 1", "Live tokens:         1"} {
		if !strings.Contains(r.out, line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, r.out)
		}
	}
	if !strings.Contains(r.out, " (current)\n") {
		t.Errorf("schema not shown as current:\n%s", r.out)
	}
}

// TestStableShape pins the JSON and YAML keys scripts rely on.
func TestStableShape(t *testing.T) {
	h := start(t)
	viewer := h.env.Token(t, "viewer", "viewer")
	keys := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	for _, format := range []string{"json", "yaml"} {
		r := h.as(viewer, "status", "-o", format)
		if r.code != 0 {
			t.Fatalf("-o %s as viewer: exit %d: %s", format, r.code, r.errOut)
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(r.out), &doc); err != nil {
			t.Fatal(err)
		}
		if got, want := keys(doc), []string{"client_version", "context", "counts", "not_ready_reason", "ready", "schema", "server", "server_version"}; !reflect.DeepEqual(got, want) {
			t.Errorf("-o %s keys: got %v, want %v", format, got, want)
		}
		counts := doc["counts"].(map[string]any)
		if got, want := keys(counts), []string{"admins", "definitions", "live_tokens", "memberships", "quarantined_callers", "quarantined_targets"}; !reflect.DeepEqual(got, want) {
			t.Errorf("-o %s counts keys: got %v, want %v", format, got, want)
		}
		// A viewer may list admins but not tokens: null, not a failure.
		if counts["live_tokens"] != nil || counts["admins"] == nil {
			t.Errorf("-o %s as viewer: counts %v, want live_tokens null and admins counted", format, counts)
		}
		if keys(doc["schema"].(map[string]any))[0] != "current" {
			t.Errorf("-o %s schema: %v", format, doc["schema"])
		}
	}
	r := h.as(viewer, "status")
	if r.code != 0 || !strings.Contains(r.out, "Live tokens:         -\n") || !strings.Contains(r.out, "Admins:              0\n") {
		t.Errorf("table as viewer: exit %d\n%s", r.code, r.out)
	}
	// An enforcer may read nothing: every count is "-", and status still works.
	r = h.as(h.env.Token(t, "gw", "enforcer"), "status")
	if r.code != 0 || strings.Count(r.out, " -\n") != 7 {
		t.Errorf("table as enforcer: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
}

func TestStatusThroughContext(t *testing.T) {
	h := start(t)
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(tokenFile, []byte(h.env.AdminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.run("config", "set-context", "local", "--server", h.env.URL, "--token-file", tokenFile, "--use"); r.code != 0 {
		t.Fatalf("set-context: exit %d: %s", r.code, r.errOut)
	}
	r := h.run("status", "-o", "json")
	var got status.Status
	if err := json.Unmarshal([]byte(r.out), &got); err != nil || r.code != 0 {
		t.Fatalf("exit %d, %v: %s%s", r.code, err, r.out, r.errOut)
	}
	if got.Context != "local" || got.Server != h.env.URL || got.Counts.LiveTokens == nil {
		t.Errorf("through the context: %+v", got)
	}
	// A server from the flags but the token from the context: still the context.
	if r := h.run("--server", h.env.URL, "status", "-o", "json"); !strings.Contains(r.out, `"context": "local"`) {
		t.Errorf("token from the context: %s", r.out)
	}
}

func TestExitCodes(t *testing.T) {
	h := start(t)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"bad token", []string{"--server", h.env.URL, "--token", "nonsense", "status"}, cmdutil.ExitAuth, "Hint"},
		{"unknown context", []string{"--server", h.env.URL, "--context", "nope", "status"}, cmdutil.ExitUsage, `no context "nope"`},
		{"bad server URL", []string{"--server", "ftp://x", "--token", "t", "status"}, cmdutil.ExitUsage, "--server"},
		{"arguments", []string{"--server", h.env.URL, "--token", h.env.AdminToken, "status", "x"}, cmdutil.ExitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.run(tt.args...)
			if r.code != tt.code || !strings.Contains(r.errOut, tt.msg) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", r.code, tt.code, r.errOut, tt.msg)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	ios, _, out, _ := iostreams.Test()
	getenv := func(k string) string {
		if k == "RLCTL_CONFIG" {
			return filepath.Join(t.TempDir(), "config.yaml")
		}
		return ""
	}
	code := cli.Run(context.Background(), []string{"--server", "http://127.0.0.1:1", "--token", "t", "--timeout", "3s", "status", "-o", "json"}, ios, getenv)
	if code != cmdutil.ExitError {
		t.Errorf("exit %d, want 1", code)
	}
	var got status.Status
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if got.Ready || got.NotReadyReason == "" || got.Server != "http://127.0.0.1:1" || got.Counts.Definitions != nil {
		t.Errorf("unreachable: %+v", got)
	}
}
