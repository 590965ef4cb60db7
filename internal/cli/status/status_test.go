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

	"github.com/rlctl/rlctl/internal/cli/clitest"
	"github.com/rlctl/rlctl/internal/cli/cmdutil"
	"github.com/rlctl/rlctl/internal/cli/status"
	"github.com/rlctl/rlctl/internal/version"
	"github.com/rlctl/rlctl/pkg/client"
	rl "github.com/rlctl/rlctl/pkg/ratelimit"
)

// seed fills the server with one of everything the status counts.
func seed(h *clitest.Rlctl) {
	h.T.Helper()
	ctx := context.Background()
	c := h.Client()
	limit := 60
	for _, name := range []string{"developers", "batch"} {
		d := rl.Definition{Axis: rl.AxisCaller, EntityType: rl.EntityGroup, Name: name, WindowSeconds: 60, UserMaxRequests: &limit, Enabled: true}
		if _, err := c.PutDefinition(ctx, d, client.WriteOptions{}); err != nil {
			h.T.Fatal(err)
		}
	}
	if _, err := c.PutMembership(ctx, rl.Membership{SubjectType: "user", Subject: "alice", Groups: []string{"developers"}}, client.WriteOptions{}); err != nil {
		h.T.Fatal(err)
	}
	if _, err := c.Quarantine(ctx, "client", "leaky", client.QuarantineRequest{Reason: "leak"}, client.WriteOptions{}); err != nil {
		h.T.Fatal(err)
	}
	if _, err := c.PutAdmin(ctx, rl.Admin{SubjectType: "user", Subject: "root"}, client.WriteOptions{}); err != nil {
		h.T.Fatal(err)
	}
	if _, err := c.CreateToken(ctx, client.CreateTokenRequest{Name: "revoked", Role: "viewer"}); err != nil {
		h.T.Fatal(err)
	}
	if err := c.RevokeToken(ctx, "revoked"); err != nil {
		h.T.Fatal(err)
	}
}

func intp(n int) *int { return &n }

func TestStatusAsAdmin(t *testing.T) {
	h := clitest.StartParallel(t)
	seed(h)

	r := h.Run("status", "-o", "json")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.ErrOut)
	}
	var got status.Status
	if err := json.Unmarshal([]byte(r.Out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Server != h.Env.URL || got.Context != "" || got.ClientVersion != version.String() || got.ServerVersion == "" {
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

	// The harness's rlapi counts in its PostgreSQL, without gRPC or leases.
	if s := got.Setup; s == nil || s.CounterStore.Backend != "postgres" || !s.CounterStore.Reachable || s.CounterStore.Error != "" ||
		!strings.HasSuffix(s.CounterStore.Address, "/"+h.Env.Store.Pool().Config().ConnConfig.Database) || s.GRPC.Enabled || s.Leases.Enabled || s.Replica == "" {
		t.Errorf("setup: %+v", s)
	}

	r = h.Run("status")
	for _, line := range []string{"Server:              " + h.Env.URL, "Context:             -", "Ready:               yes", "Definitions:         4", "Quarantined callers: 1", "Live tokens:         1",
		"gRPC:                off", "Leases:              off", "Fail policy:         open"} {
		if !strings.Contains(r.Out, line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, r.Out)
		}
	}
	if !strings.Contains(r.Out, "Counter store:       postgres ") || !strings.Contains(r.Out, " (reachable, ") {
		t.Errorf("table lacks the counter store, reachable:\n%s", r.Out)
	}
	if !strings.Contains(r.Out, " (current)\n") {
		t.Errorf("schema not shown as current:\n%s", r.Out)
	}
}

// TestStableShape pins the JSON and YAML keys scripts rely on.
func TestStableShape(t *testing.T) {
	h := clitest.StartParallel(t)
	viewer := h.Env.Token(t, "viewer", "viewer")
	keys := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	for _, format := range []string{"json", "yaml"} {
		r := h.RunWith(clitest.Opts{Token: viewer}, "status", "-o", format)
		if r.Code != 0 {
			t.Fatalf("-o %s as viewer: exit %d: %s", format, r.Code, r.ErrOut)
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(r.Out), &doc); err != nil {
			t.Fatal(err)
		}
		if got, want := keys(doc), []string{"client_version", "context", "counts", "enforcement", "not_ready_reason", "ready", "schema", "server", "server_version", "setup"}; !reflect.DeepEqual(got, want) {
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
	r := h.RunWith(clitest.Opts{Token: viewer}, "status")
	if r.Code != 0 || !strings.Contains(r.Out, "Live tokens:         -\n") || !strings.Contains(r.Out, "Admins:              0\n") {
		t.Errorf("table as viewer: exit %d\n%s", r.Code, r.Out)
	}
	// A viewer reads the master switch: on by default.
	if !strings.Contains(r.Out, "Enforcement:         on\n") {
		t.Errorf("table as viewer lacks the master switch:\n%s", r.Out)
	}
	// An enforcer may read nothing: every count, the switch and the
	// setup are "-", and status still works.
	r = h.RunWith(clitest.Opts{Token: h.Env.Token(t, "gw", "enforcer")}, "status")
	if r.Code != 0 || strings.Count(r.Out, " -\n") != 12 {
		t.Errorf("table as enforcer: exit %d\n%s%s", r.Code, r.Out, r.ErrOut)
	}
}

func TestStatusThroughContext(t *testing.T) {
	h := clitest.StartParallel(t)
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(tokenFile, []byte(h.Env.AdminToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := h.RunWith(clitest.Opts{Bare: true}, "config", "set-context", "local", "--server", h.Env.URL, "--token-file", tokenFile, "--use"); r.Code != 0 {
		t.Fatalf("set-context: exit %d: %s", r.Code, r.ErrOut)
	}
	r := h.RunWith(clitest.Opts{Bare: true}, "status", "-o", "json")
	var got status.Status
	if err := json.Unmarshal([]byte(r.Out), &got); err != nil || r.Code != 0 {
		t.Fatalf("exit %d, %v: %s%s", r.Code, err, r.Out, r.ErrOut)
	}
	if got.Context != "local" || got.Server != h.Env.URL || got.Counts.LiveTokens == nil {
		t.Errorf("through the context: %+v", got)
	}
	// A server from the flags but the token from the context: still the context.
	if r := h.RunWith(clitest.Opts{Bare: true}, "--server", h.Env.URL, "status", "-o", "json"); !strings.Contains(r.Out, `"context": "local"`) {
		t.Errorf("token from the context: %s", r.Out)
	}
}

func TestExitCodes(t *testing.T) {
	h := clitest.StartParallel(t)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"bad token", []string{"--server", h.Env.URL, "--token", "nonsense", "status"}, cmdutil.ExitAuth, "Hint"},
		{"unknown context", []string{"--server", h.Env.URL, "--context", "nope", "status"}, cmdutil.ExitUsage, `no context "nope"`},
		{"bad server URL", []string{"--server", "ftp://x", "--token", "t", "status"}, cmdutil.ExitUsage, "--server"},
		{"arguments", []string{"--server", h.Env.URL, "--token", h.Env.AdminToken, "status", "x"}, cmdutil.ExitUsage, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.RunWith(clitest.Opts{Bare: true}, tt.args...)
			if r.Code != tt.code || !strings.Contains(r.ErrOut, tt.msg) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", r.Code, tt.code, r.ErrOut, tt.msg)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	r := clitest.New(t).Run("--server", "http://127.0.0.1:1", "--token", "t", "--timeout", "3s", "status", "-o", "json")
	if r.Code != cmdutil.ExitError {
		t.Errorf("exit %d, want 1", r.Code)
	}
	var got status.Status
	if err := json.Unmarshal([]byte(r.Out), &got); err != nil {
		t.Fatalf("%v: %s", err, r.Out)
	}
	if got.Ready || got.NotReadyReason == "" || got.Server != "http://127.0.0.1:1" || got.Counts.Definitions != nil {
		t.Errorf("unreachable: %+v", got)
	}
}
