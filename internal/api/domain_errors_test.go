package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// wantProblem checks the whole answer a refusal gets (status, problem type
// and detail, as they were before the domain errors moved to
// pkg/ratelimit) and that the SDK names it with each of sentinels.
func wantProblem(t *testing.T, err error, status int, kind, detail string, sentinels ...error) {
	t.Helper()
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want an API error", err)
	}
	if apiErr.StatusCode != status || apiErr.Type != client.ProblemTypeBase+kind || apiErr.Detail != detail {
		t.Errorf("got %d %s %q\nwant %d %s %q", apiErr.StatusCode, apiErr.Type, apiErr.Detail, status, client.ProblemTypeBase+kind, detail)
	}
	for _, s := range sentinels {
		if !errors.Is(err, s) {
			t.Errorf("errors.Is(%v, %v) = false", err, s)
		}
	}
}

func TestDomainRefusalsReachTheSDK(t *testing.T) {
	t.Parallel()
	c, env := newClient(t)
	ctx := context.Background()
	for _, s := range []string{"root", "dave"} {
		if _, err := c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "user", Subject: s}, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Quarantine(ctx, "client", "bot", client.QuarantineRequest{}, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	const refuseRoot = "Refusing to quarantine 'root': it has administrator privileges. Administrators cannot be quarantined; revoke the grant first (DELETE /api/rate-limit-admins/user:root) if this is intended."
	const botQuarantined = "'bot' is quarantined; remove the quarantine (DELETE /api/rate-limit-quarantine/client:bot) before making it an administrator"
	quarantine := func(subject string) ratelimit.Membership {
		return ratelimit.Membership{SubjectType: "user", Subject: subject, Groups: []string{"quarantine-callers"}}
	}

	_, err := c.Quarantine(ctx, "user", "root", client.QuarantineRequest{}, client.WriteOptions{})
	wantProblem(t, err, 403, "admin-quarantine", refuseRoot, client.ErrAdminQuarantine, client.ErrRefused, client.ErrForbidden)
	_, err = c.PutMembership(ctx, quarantine("root"), client.WriteOptions{})
	wantProblem(t, err, 403, "admin-quarantine", refuseRoot, client.ErrAdminQuarantine, client.ErrRefused)
	_, err = c.Apply(ctx, client.State{Memberships: []ratelimit.Membership{quarantine("root"), quarantine("dave")}}, client.ApplyOptions{Quarantine: true})
	wantProblem(t, err, 403, "admin-quarantine", refuseRoot+" 1 more memberships in this apply quarantine administrators too.",
		client.ErrAdminQuarantine, client.ErrRefused)
	if errors.Is(err, client.ErrRoleForbidden) || errors.Is(err, client.ErrQuarantinedAdmin) {
		t.Errorf("%v is a role refusal or a quarantined admin too", err)
	}

	_, err = c.PutAdmin(ctx, ratelimit.Admin{SubjectType: "client", Subject: "bot"}, client.WriteOptions{})
	wantProblem(t, err, 409, "quarantined", botQuarantined, client.ErrQuarantinedAdmin, client.ErrConflict)
	_, err = c.Apply(ctx, client.State{Admins: []ratelimit.Admin{{SubjectType: "client", Subject: "bot"}}}, client.ApplyOptions{Quarantine: true})
	wantProblem(t, err, 409, "quarantined", botQuarantined, client.ErrQuarantinedAdmin, client.ErrConflict)
	if errors.Is(err, client.ErrAdminQuarantine) || errors.Is(err, client.ErrRefused) {
		t.Errorf("%v is an admin quarantine or a 403 refusal too", err)
	}

	// A viewer's 403 is the role's, not a refusal of the change.
	viewer := clientFor(t, env, env.Token(t, "viewer", "viewer"))
	_, err = viewer.Quarantine(ctx, "user", "eve", client.QuarantineRequest{}, client.WriteOptions{})
	if !errors.Is(err, client.ErrRoleForbidden) || errors.Is(err, client.ErrRefused) || errors.Is(err, client.ErrAdminQuarantine) {
		t.Errorf("viewer's quarantine: %v is not only a role refusal", err)
	}

	// The admin check cannot be made: 503, nothing quarantined.
	if _, err := env.Store.Pool().Exec(ctx, `alter table rl_admins rename to rl_admins_gone`); err != nil {
		t.Fatal(err)
	}
	_, err = c.Quarantine(ctx, "user", "mallory", client.QuarantineRequest{}, client.WriteOptions{})
	wantProblem(t, err, 503, "admin-check-failed",
		"cannot verify whether 'mallory' is an administrator, so it was not quarantined (quarantine fails closed); retry shortly",
		client.ErrAdminCheckFailed, client.ErrUnavailable)
	if _, err := env.Store.Pool().Exec(ctx, `alter table rl_admins_gone rename to rl_admins`); err != nil {
		t.Fatal(err)
	}
}

// jsonFields lists the JSON names of a struct type's fields.
func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// The decision request is enforce.Call; pkg/client, which imports only the
// standard library, keeps its own wire type. This holds the two together.
func TestCheckRequestIsEnforceCallOnTheWire(t *testing.T) {
	t.Parallel()
	sdk, core := jsonFields(reflect.TypeFor[client.CheckRequest]()), jsonFields(reflect.TypeFor[enforce.Call]())
	if !slices.Equal(sdk, core) {
		t.Errorf("client.CheckRequest fields %v, enforce.Call fields %v", sdk, core)
	}
	// A request the SDK writes decodes into the same call.
	req := client.CheckRequest{Username: "alice", ClientID: "bot", IsAdmin: true, TargetType: "mcp_server", TargetName: "db", Tool: "query", Cost: 3}
	b, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var got enforce.Call
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := enforce.Call{Username: "alice", ClientID: "bot", IsAdmin: true, TargetType: "mcp_server", TargetName: "db", Tool: "query", Cost: 3}
	if got != want {
		t.Errorf("decoded %+v, want %+v", got, want)
	}

	for _, r := range []struct{ sdk, core string }{
		{client.ReasonAllowed, enforce.ReasonAllowed},
		{client.ReasonThrottled, enforce.ReasonThrottled},
		{client.ReasonQuarantined, enforce.ReasonQuarantined},
		{client.ReasonFailOpen, enforce.ReasonFailOpen},
		{client.ReasonFailClosed, enforce.ReasonFailClosed},
		{client.ReasonEnforcementOff, enforce.ReasonEnforcementOff},
		{client.ReasonAuthLocked, enforce.ReasonAuthLocked},
		{client.ReasonLockedOut, enforce.ReasonLockedOut},
	} {
		if r.sdk != r.core {
			t.Errorf("client reason %q, enforce reason %q", r.sdk, r.core)
		}
	}
}
