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

// A definition's fail policy (open, closed, degrade) through the API:
// stored and read back with fail_closed in step (fail_closed alone, the
// older spelling, reads back as fail_policy closed and closed alone as
// fail_closed true, so replicas reading either agree), none when the
// definition leaves it to the enforcer; a bad value, fail_closed beside
// another policy or a policy on a quarantine sentinel refused with a 400
// naming fail_policy and nothing stored; an apply of what is stored
// changing nothing, and a new policy an update of that field.
func TestDefinitionFailPolicyThroughTheAPI(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, api.Config{})
	admin := clientFor(t, env, env.AdminToken)
	hc := contractHTTPClient(t)
	ctx := t.Context()

	older := targetLimit("mcp_server", "older", 60, 100)
	older.FailClosed = true
	closed := targetLimit("mcp_server", "closed", 60, 100)
	closed.FailPolicy = ratelimit.FailPolicyClosed
	degrade := group("degrade", 60, 1000, 0)
	degrade.FailPolicy = ratelimit.FailPolicyDegrade
	open := targetLimit("mcp_server", "open", 60, 100)
	open.FailPolicy = ratelimit.FailPolicyOpen
	plain := targetLimit("mcp_server", "plain", 60, 100)
	define(t, env, admin, older, closed, degrade, open, plain)
	for _, tc := range []struct {
		d          ratelimit.Definition
		policy     string
		failClosed bool
	}{
		{older, "closed", true}, {closed, "closed", true}, {degrade, "degrade", false}, {open, "open", false}, {plain, "", false},
	} {
		got, err := admin.GetDefinition(ctx, tc.d.Key())
		if err != nil || got.FailPolicy != tc.policy || got.FailClosed != tc.failClosed {
			t.Errorf("GET %s: fail_policy %q fail_closed %t (%v), want %q and %t", tc.d.Key(), got.FailPolicy, got.FailClosed, err, tc.policy, tc.failClosed)
		}
	}
	if a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limits/" + plain.Key(), token: env.AdminToken}); a.status != 200 || strings.Contains(string(a.body), `"fail_policy"`) {
		t.Errorf("GET %s: %d %s, want no fail_policy field", plain.Key(), a.status, a.body)
	}
	if a := send(t, hc, env.URL, call{method: "GET", path: "/api/rate-limits/" + older.Key(), token: env.AdminToken}); a.status != 200 ||
		!strings.Contains(string(a.body), `"fail_policy":"closed"`) || !strings.Contains(string(a.body), `"fail_closed":true`) {
		t.Errorf("GET %s: %d %s, want \"fail_policy\":\"closed\" and \"fail_closed\":true", older.Key(), a.status, a.body)
	}
	// The older spelling again is no change.
	stored, err := admin.GetDefinition(ctx, older.Key())
	if err != nil {
		t.Fatal(err)
	}
	if r, err := admin.PutDefinition(ctx, older, client.WriteOptions{}); err != nil || r.Value.Version != stored.Version {
		t.Errorf("PUT %s with fail_closed again: version %d (%v), want %d: unchanged", older.Key(), r.Value.Version, err, stored.Version)
	}

	// Refusals name the field and store nothing.
	before, err := admin.GetDefinition(ctx, degrade.Key())
	if err != nil {
		t.Fatal(err)
	}
	var ae *client.APIError
	for _, tc := range []struct {
		name string
		d    ratelimit.Definition
		msg  string
	}{
		{"an unknown policy", withFailPolicy(degrade, "deny", false),
			`fail_policy: must be one of open, closed, degrade, or absent for the enforcer's default (got "deny")`},
		{"a policy in capitals", withFailPolicy(degrade, "Closed", false),
			`fail_policy: must be one of open, closed, degrade, or absent for the enforcer's default (got "Closed")`},
		{"fail_closed beside degrade", withFailPolicy(degrade, "degrade", true),
			`fail_policy: "degrade" contradicts fail_closed: true, the older spelling of fail_policy closed; give fail_policy alone`},
		{"fail_closed beside open", withFailPolicy(degrade, "open", true),
			`fail_policy: "open" contradicts fail_closed: true, the older spelling of fail_policy closed; give fail_policy alone`},
	} {
		_, err := admin.PutDefinition(ctx, tc.d, client.WriteOptions{})
		if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "fail_policy" || ae.Errors[0].Message != tc.msg {
			t.Errorf("%s: %v (%+v), want a 400: %s", tc.name, err, ae, tc.msg)
		}
	}
	if after, err := admin.GetDefinition(ctx, degrade.Key()); err != nil || after.Version != before.Version || after.FailPolicy != ratelimit.FailPolicyDegrade {
		t.Errorf("after the refused PUTs %s is version %d fail_policy %q (%v), want version %d degrade", degrade.Key(), after.Version, after.FailPolicy, err, before.Version)
	}
	fresh := withFailPolicy(targetLimit("mcp_server", "fresh", 60, 100), "off", false)
	if _, err := admin.PutDefinition(ctx, fresh, client.WriteOptions{}); !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Errors[0].Field != "fail_policy" {
		t.Errorf("fail_policy off: %v, want a 400 naming fail_policy", err)
	}
	if _, err := admin.GetDefinition(ctx, fresh.Key()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused PUT stored %s: %v", fresh.Key(), err)
	}
	sentinel := ratelimit.Definition{Axis: "quarantine", EntityType: "group", Name: "quarantine-callers", WindowSeconds: 1, Enabled: true,
		FailPolicy: ratelimit.FailPolicyDegrade}
	_, err = admin.PutDefinition(ctx, sentinel, client.WriteOptions{})
	if !errors.As(err, &ae) || ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "fail_policy" ||
		ae.Errors[0].Message != `fail_policy: not allowed on the quarantine axis; quarantine blocks outright and counts nothing (got "degrade")` {
		t.Errorf("fail_policy on a sentinel: %v (%+v), want a 400 naming fail_policy", err, ae)
	}
	// The sentinel's fail_closed, which the API always took, still is.
	sentinel.FailPolicy, sentinel.FailClosed = "", true
	if r, err := admin.PutDefinition(ctx, sentinel, client.WriteOptions{}); err != nil || r.Value.FailPolicy != "" || !r.Value.FailClosed {
		t.Errorf("fail_closed on a sentinel: %+v, %v, want stored as sent, with no fail_policy", r.Value, err)
	}
	good := targetLimit("mcp_server", "good", 60, 100)
	if _, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{good, withFailPolicy(degrade, "sometimes", false)}}, client.ApplyOptions{}); !errors.As(err, &ae) ||
		ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "definitions[1].fail_policy" {
		t.Fatalf("apply with fail_policy sometimes: %v (%+v), want a 400 naming definitions[1].fail_policy", err, ae)
	}
	if _, err := admin.GetDefinition(ctx, good.Key()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused apply stored %s: %v", good.Key(), err)
	}

	// Export, then apply back: nothing changes, nor does a file that
	// spells closed the older way; a new policy is an update of that
	// field (and of fail_closed, when it leaves or becomes closed).
	wantStoredDefinitionsUnchangedByApply(t, admin)
	res, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{withFailPolicy(closed, "", true)}}, client.ApplyOptions{})
	if err != nil || res.Changed() {
		t.Errorf("applying fail_closed over fail_policy closed: %+v, %v, want no change", res, err)
	}
	res, err = admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{withFailPolicy(degrade, "open", false)}}, client.ApplyOptions{})
	if err != nil || res.Updated != 1 || len(res.Changes) != 1 || len(res.Changes[0].Fields) != 1 || res.Changes[0].Fields[0].Field != "fail_policy" ||
		res.Changes[0].Fields[0].From != "degrade" || res.Changes[0].Fields[0].To != "open" {
		t.Errorf("apply fail_policy open: %+v, %v, want one update of fail_policy, degrade to open", res, err)
	}
	res, err = admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{withFailPolicy(closed, "degrade", false)}}, client.ApplyOptions{})
	if err != nil || res.Updated != 1 || len(res.Changes) != 1 || fieldNames(res.Changes[0].Fields) != "fail_closed,fail_policy" {
		t.Errorf("apply fail_policy degrade over closed: %+v, %v, want one update of fail_closed and fail_policy", res, err)
	}
	if got, err := admin.GetDefinition(ctx, closed.Key()); err != nil || got.FailPolicy != ratelimit.FailPolicyDegrade || got.FailClosed {
		t.Errorf("after the apply %s has fail_policy %q fail_closed %t (%v), want degrade and false", closed.Key(), got.FailPolicy, got.FailClosed, err)
	}
	// Back to the enforcer's default by saying nothing: the PUT replaces
	// the definition whole.
	if r, err := admin.PutDefinition(ctx, withFailPolicy(older, "", false), client.WriteOptions{}); err != nil || r.Value.FailPolicy != "" || r.Value.FailClosed {
		t.Errorf("PUT without a fail policy: %+v, %v, want none and fail_closed false", r.Value, err)
	}
}

// wantStoredDefinitionsUnchangedByApply: a dry-run apply of every stored
// definition, as read, changes nothing (what an export and an apply of it
// do).
func wantStoredDefinitionsUnchangedByApply(t *testing.T, admin *client.Client) {
	t.Helper()
	defs, err := admin.ListAllDefinitions(t.Context(), client.DefinitionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := admin.Apply(t.Context(), client.State{Definitions: defs}, client.ApplyOptions{DryRun: true})
	if err != nil || res.Changed() {
		t.Errorf("applying what is stored: %+v, %v, want no change", res, err)
	}
}

func withFailPolicy(d ratelimit.Definition, policy string, failClosed bool) ratelimit.Definition {
	d.FailPolicy, d.FailClosed = policy, failClosed
	return d
}

func fieldNames(cs []client.Change) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Field
	}
	return strings.Join(names, ",")
}
