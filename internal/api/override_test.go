package api_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rlctl/rlctl/internal/api"
	"github.com/rlctl/rlctl/internal/apitest"
	validation "github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// overridesOf is a /api/check gate's overrides.
func overridesOf(g map[string]any) []string {
	var ids []string
	list, _ := g["overrides"].([]any)
	for _, id := range list {
		ids = append(ids, fmt.Sprint(id))
	}
	return ids
}

// appliesBackUnchanged exports what is stored (definitions and
// memberships) and applies it back in a dry run: nothing changes.
func appliesBackUnchanged(t *testing.T, admin *client.Client) {
	t.Helper()
	ctx := t.Context()
	defs, err := admin.ListAllDefinitions(ctx, client.DefinitionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	mems, err := admin.ListAllMemberships(ctx, client.MembershipFilter{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := admin.Apply(ctx, client.State{Definitions: defs, Memberships: mems}, client.ApplyOptions{DryRun: true})
	if err != nil || res.Changed() {
		t.Errorf("applying what is stored: %+v, %v, want no change", res, err)
	}
}

// Overrides through the API: a premium member gets the premium group's
// 100/min over an everyone default of 25/min, a user definition of 5/min
// beats premium, a caller with no override keeps the default; /api/check's
// gates and the status name the limit applied and the one overridden;
// refusals name the field and store nothing; what is stored applies back
// unchanged.
func TestOverridesThroughTheAPI(t *testing.T) {
	t.Parallel()
	// Floors of 1/min: the test's user override is 5/min.
	env := apitest.Start(t, api.Config{TrustedProxies: mustPrefixes("127.0.0.0/8"), GatewaySecret: gatewaySecret,
		Floors: validation.Floors{User: 1, Agent: 1}})
	admin := clientFor(t, env, env.AdminToken)
	gw := env.Token(t, "gateway", "enforcer")
	hc := contractHTTPClient(t)
	ctx := t.Context()

	everyone := group("all", 60, 25, 25)
	everyone.Everyone = true
	premium := group("premium", 60, 100, 0)
	premium.Override = true
	bob := ratelimit.Definition{Axis: "caller", EntityType: "user", Name: "bob", WindowSeconds: 60, UserMaxRequests: ptr(5), Enabled: true}

	// Refusals name the field and the rule; an apply with one stores nothing.
	var ae *client.APIError
	bad := everyone
	bad.Override = true
	if _, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{premium, bad}}, client.ApplyOptions{}); !errors.As(err, &ae) ||
		ae.StatusCode != 400 || len(ae.Errors) != 1 || ae.Errors[0].Field != "definitions[1].override" {
		t.Fatalf("apply with an override for everyone: %v (%+v), want a 400 naming definitions[1].override", err, ae)
	}
	if _, err := admin.GetDefinition(ctx, premium.Key()); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("the refused apply stored %s: %v", premium.Key(), err)
	}
	badSubject := bob
	badSubject.Name = "bob|admin"
	if _, err := admin.PutDefinition(ctx, badSubject, client.WriteOptions{}); !errors.As(err, &ae) || ae.StatusCode != 400 ||
		len(ae.Errors) != 1 || ae.Errors[0].Field != "name" {
		t.Errorf("a user definition named bob|admin: %v (%+v), want a 400 naming name", err, ae)
	}
	perIP := bob
	perIP.Per = ratelimit.PerIP
	if _, err := admin.PutDefinition(ctx, perIP, client.WriteOptions{}); !errors.As(err, &ae) || ae.StatusCode != 400 ||
		len(ae.Errors) != 1 || ae.Errors[0].Field != "per" {
		t.Errorf("a user definition per ip: %v (%+v), want a 400 naming per", err, ae)
	}
	if defs, err := admin.ListAllDefinitions(ctx, client.DefinitionFilter{}); err != nil || slices.ContainsFunc(defs, func(d ratelimit.Definition) bool { return d.Axis == "caller" }) {
		t.Fatalf("after the refusals: %v caller definitions (%v), want none", defs, err)
	}

	awayFromWindowEdge(t, 60)
	define(t, env, admin, everyone, premium, bob)
	if got, err := admin.GetDefinition(ctx, bob.Key()); err != nil || !got.Override || got.ID != "caller:user:bob:60" {
		t.Errorf("GET %s: %+v (%v), want an override", bob.Key(), got, err)
	}
	for _, m := range []ratelimit.Membership{
		{SubjectType: "user", Subject: "alice", Groups: []string{"premium"}},
		{SubjectType: "user", Subject: "bob", Groups: []string{"premium"}},
	} {
		if _, err := admin.PutMembership(ctx, m, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	refresh(t, env)

	// alice, premium: the 26th call passes, the 101st is throttled.
	for i := 1; i <= 100; i++ {
		r := checkTeam(t, hc, env, gw, "alice", "", "")
		if !r.Allowed {
			t.Fatalf("alice's call %d: %+v, want allowed (premium's 100/min overrides everyone's 25)", i, r)
		}
		if i == 26 && (len(r.Gates) != 1 || r.Gates[0]["definition_id"] != premium.Key() || r.Gates[0]["matched_by"] != "user:alice" ||
			fmt.Sprint(overridesOf(r.Gates[0])) != "["+everyone.Key()+"]" || r.Gates[0]["limit"] != float64(100)) {
			t.Errorf("alice's 26th call: gates %v, want premium's at 100, matched by user:alice, overriding %s", r.Gates, everyone.Key())
		}
	}
	if r := checkTeam(t, hc, env, gw, "alice", "", ""); r.Allowed || fmt.Sprint(deniedIDs(r)) != "["+premium.Key()+"]" {
		t.Errorf("alice's 101st call: %+v, want throttled by %s", r, premium.Key())
	}
	// bob, premium too, but named by a definition of his own: 5/min.
	for i := 1; i <= 5; i++ {
		if r := checkTeam(t, hc, env, gw, "bob", "", ""); !r.Allowed {
			t.Fatalf("bob's call %d: %+v, want allowed", i, r)
		}
	}
	r := checkTeam(t, hc, env, gw, "bob", "", "")
	if r.Allowed || fmt.Sprint(deniedIDs(r)) != "["+bob.Key()+"]" || r.Gates[0]["matched_by"] != "user:bob" {
		t.Errorf("bob's 6th call: %+v, want throttled by %s, matched by user:bob", r, bob.Key())
	}
	if got, want := slices.Sorted(slices.Values(overridesOf(r.Gates[0]))), []string{everyone.Key(), premium.Key()}; !slices.Equal(got, want) {
		t.Errorf("bob's gate overrides %v, want %v", got, want)
	}
	// carol, no override: everyone's 25/min, as before overrides existed.
	for i := 1; i <= 25; i++ {
		if r := checkTeam(t, hc, env, gw, "carol", "", ""); !r.Allowed {
			t.Fatalf("carol's call %d: %+v, want allowed", i, r)
		}
	}
	if r := checkTeam(t, hc, env, gw, "carol", "", ""); r.Allowed || fmt.Sprint(deniedIDs(r)) != "["+everyone.Key()+"]" || len(overridesOf(r.Gates[0])) != 0 {
		t.Errorf("carol's 26th call: %+v, want throttled by %s, overriding nothing", r, everyone.Key())
	}

	// The status lists the limits that apply and says which were overridden.
	st, err := admin.Status(ctx, client.StatusQuery{Username: "bob", EntityType: "mcp_server", Name: "srv"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{everyone.Key(): bob.Key(), premium.Key(): bob.Key()}
	if fmt.Sprint(st.OverriddenBy) != fmt.Sprint(want) || st.MatchedBy[bob.Key()] != "user:bob" || st.MatchedBy[premium.Key()] != "user:bob" || len(st.Caller) != 3 {
		t.Errorf("bob's status: overridden_by %v matched_by %v caller %d, want overridden_by %v, all three listed", st.OverriddenBy, st.MatchedBy, len(st.Caller), want)
	}
	if st, err := admin.Status(ctx, client.StatusQuery{Username: "carol", EntityType: "mcp_server", Name: "srv"}); err != nil || st.OverriddenBy != nil {
		t.Errorf("carol's status: overridden_by %v (%v), want none", st.OverriddenBy, err)
	}
	if st, err := admin.Status(ctx, client.StatusQuery{EntityType: "user", Name: "bob"}); err != nil || len(st.Definitions) != 1 || st.Definitions[0].ID != bob.Key() {
		t.Errorf("status of the user bob's definitions: %+v (%v), want %s alone", st.Definitions, err, bob.Key())
	}

	// Export, then apply back: nothing changes; dropping override is a
	// change apply reports by field.
	appliesBackUnchanged(t, admin)
	premium.Override = false
	res, err := admin.Apply(ctx, client.State{Definitions: []ratelimit.Definition{premium}}, client.ApplyOptions{DryRun: true})
	if err != nil || res.Updated != 1 || len(res.Changes) != 1 || len(res.Changes[0].Fields) != 1 || res.Changes[0].Fields[0].Field != "override" {
		t.Errorf("apply premium without override: %+v, %v, want one update of override", res, err)
	}
}
