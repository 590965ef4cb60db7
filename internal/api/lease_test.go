package api_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// A definition's lease (auto, never, always) through the API: stored and
// read back (auto, the default, as no lease, so what was exported before
// reads and applies as it did), a bad value or a lease where nothing is
// counted refused with a 400 naming lease and nothing stored, and an
// apply of what is stored changing nothing.
func TestDefinitionLeaseThroughTheAPI(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	hc := contractHTTPClient(t)
	ctx := t.Context()

	billing := targetLimit("mcp_server", "billing", 3600, 1000)
	billing.Lease = ratelimit.LeaseNever
	hot := group("hot", 60, 100000, 0)
	hot.Lease = ratelimit.LeaseAlways
	plain := targetLimit("mcp_server", "plain", 60, 100)
	plain.Lease = ratelimit.LeaseAuto
	define(t, env, admin, billing, hot, plain)
	for _, want := range []ratelimit.Definition{billing, hot} {
		got, err := admin.GetDefinition(ctx, want.Key())
		if err != nil || got.Lease != want.Lease {
			t.Errorf("GET %s: lease %q (%v), want %q", want.Key(), got.Lease, err, want.Lease)
		}
	}
	got, err := admin.GetDefinition(ctx, plain.Key())
	if err != nil || got.Lease != "" {
		t.Errorf("GET %s: lease %q (%v), want none (auto is the default)", plain.Key(), got.Lease, err)
	}
	if a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limits/" + plain.Key(), token: env.AdminToken}); a.status != 200 || strings.Contains(string(a.body), `"lease"`) {
		t.Errorf("GET %s: %d %s, want no lease field", plain.Key(), a.status, a.body)
	}
	if a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limits/" + billing.Key(), token: env.AdminToken}); a.status != 200 || !strings.Contains(string(a.body), `"lease":"never"`) {
		t.Errorf("GET %s: %d %s, want \"lease\":\"never\"", billing.Key(), a.status, a.body)
	}

	// Refusals name the field and store nothing.
	before, err := admin.GetDefinition(ctx, billing.Key())
	if err != nil {
		t.Fatal(err)
	}
	var ae *client.APIError
	typo := billing
	typo.Lease = "sometimes"
	_, err = admin.PutDefinition(ctx, typo, client.WriteOptions{})
	if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "lease" ||
		ae.Errors[0].Message != `lease: must be one of auto, never, always (got "sometimes")` {
		t.Fatalf("lease sometimes: %v (%+v), want a 400 naming lease and its three values", err, ae)
	}
	if after, err := admin.GetDefinition(ctx, billing.Key()); err != nil || after.Version != before.Version || after.Lease != ratelimit.LeaseNever {
		t.Errorf("after the refused PUT %s is version %d lease %q (%v), want version %d lease never", billing.Key(), after.Version, after.Lease, err, before.Version)
	}
	fresh := targetLimit("mcp_server", "fresh", 60, 100)
	fresh.Lease = "Never"
	if _, err := admin.PutDefinition(ctx, fresh, client.WriteOptions{}); !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Errors[0].Field != "lease" {
		t.Errorf("lease Never: %v, want a 400 naming lease", err)
	}
	if _, err := admin.GetDefinition(ctx, fresh.Key()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused PUT stored %s: %v", fresh.Key(), err)
	}
	for _, tc := range []struct {
		name string
		d    ratelimit.Definition
		msg  string
	}{
		{"a quarantine sentinel", ratelimit.Definition{Axis: "quarantine", EntityType: "group", Name: "quarantine-callers", WindowSeconds: 1, Enabled: true, Lease: ratelimit.LeaseNever},
			`lease: not allowed on the quarantine axis; quarantine blocks outright and counts nothing to lease (got "never")`},
		{"an exempt route", ratelimit.Definition{Axis: "target", EntityType: "route", Name: "public", WindowSeconds: 60, Paths: []string{"/docs"}, Exempt: true, Enabled: true, Lease: ratelimit.LeaseAlways},
			`lease: not allowed on an exempt route: its paths are never counted, so there is nothing to lease (got "always")`},
	} {
		_, err := admin.PutDefinition(ctx, tc.d, client.WriteOptions{})
		if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "lease" || ae.Errors[0].Message != tc.msg {
			t.Errorf("lease on %s: %v (%+v), want a 400: %s", tc.name, err, ae, tc.msg)
		}
	}
	sentinel, err := admin.GetDefinition(ctx, ratelimit.SentinelCallers)
	if err != nil || sentinel.Lease != "" {
		t.Errorf("the sentinel after the refused PUT: lease %q (%v), want none", sentinel.Lease, err)
	}
	good := targetLimit("mcp_server", "good", 60, 100)
	if _, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{good, typo}}, client.ApplyOptions{}); !errors.As(err, &ae) ||
		ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "definitions[1].lease" {
		t.Fatalf("apply with lease sometimes: %v (%+v), want a 400 naming definitions[1].lease", err, ae)
	}
	if _, err := admin.GetDefinition(ctx, good.Key()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused apply stored %s: %v", good.Key(), err)
	}

	// Export, then apply back: nothing changes; a new lease is an update
	// of that field alone.
	wantStoredDefinitionsUnchangedByApply(t, admin)
	billing.Lease = ratelimit.LeaseAlways
	res, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{billing}}, client.ApplyOptions{})
	if err != nil || res.Updated != 1 || len(res.Changes) != 1 || len(res.Changes[0].Fields) != 1 || res.Changes[0].Fields[0].Field != "lease" ||
		res.Changes[0].Fields[0].From != "never" || res.Changes[0].Fields[0].To != "always" {
		t.Errorf("apply lease always: %+v, %v, want one update of lease, never to always", res, err)
	}
	if got, err := admin.GetDefinition(ctx, billing.Key()); err != nil || got.Lease != ratelimit.LeaseAlways {
		t.Errorf("after the apply %s has lease %q (%v), want always", billing.Key(), got.Lease, err)
	}
	// Back to auto by saying nothing: the PUT replaces the definition whole.
	billing.Lease = ""
	if r, err := admin.PutDefinition(ctx, billing, client.WriteOptions{}); err != nil || r.Value.Lease != "" {
		t.Errorf("PUT without a lease: %+v, %v, want lease auto (none)", r.Value, err)
	}
}
