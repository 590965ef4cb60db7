package validate

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestEveryoneAndPer(t *testing.T) {
	t.Parallel()
	for _, per := range []string{"", "caller", "ip", "team", "shared"} {
		for _, axis := range []string{ratelimit.AxisCaller, ratelimit.AxisCallerTarget} {
			d, err := Definition(ratelimit.Definition{Axis: axis, EntityType: "group", Name: "everyone", WindowSeconds: 60,
				UserMaxRequests: ptr(60), Everyone: true, Per: per}, DefaultFloors())
			if err != nil {
				t.Errorf("%s per %q: %v", axis, per, err)
				continue
			}
			want := per
			if per == "caller" {
				want = "" // the default has one spelling
			}
			if d.Per != want || !d.Everyone {
				t.Errorf("%s per %q: normalized to per %q everyone %v, want per %q everyone true", axis, per, d.Per, d.Everyone, want)
			}
		}
	}
	_, err := Definition(ratelimit.Definition{Axis: "caller", EntityType: "group", Name: "g", WindowSeconds: 60,
		UserMaxRequests: ptr(60), Per: "tenant"}, DefaultFloors())
	wantProblem(t, err, "per", `per: must be one of caller, ip, team, shared (got "tenant")`)

	_, err = Definition(ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "s", WindowSeconds: 60,
		MaxRequests: ptr(60), Everyone: true, Per: "ip"}, DefaultFloors())
	wantProblem(t, err, "everyone", "everyone: not allowed on the target axis; only caller and caller_target definitions select callers")
	wantProblem(t, err, "per", `per: not allowed on the target axis; only caller and caller_target definitions key buckets by caller, ip, team or shared (got "ip")`)
}

func TestTeamMembership(t *testing.T) {
	t.Parallel()
	m, err := Membership(ratelimit.Membership{SubjectType: ratelimit.SubjectTeam, Subject: " acme-corp ",
		Groups: []string{"tenants", ratelimit.GroupQuarantineCallers}})
	if err != nil || m.ID != "team:acme-corp" {
		t.Fatalf("team membership: %+v, %v", m, err)
	}
	_, err = Membership(ratelimit.Membership{SubjectType: ratelimit.SubjectTeam, Subject: "a|b", Groups: []string{"tenants"}})
	wantProblem(t, err, "subject", `subject: a team name must not contain '|' (got "a|b"): it separates the parts of a counter key`)
	_, err = Membership(ratelimit.Membership{SubjectType: ratelimit.SubjectTeam, Subject: "acme", Groups: []string{ratelimit.GroupQuarantineTargets}})
	wantProblem(t, err, "groups[0]", "groups[0]: quarantine-targets holds servers and agents; use quarantine-callers to quarantine a team")
	if _, err := Admin(ratelimit.Admin{SubjectType: ratelimit.SubjectTeam, Subject: "acme"}); err == nil {
		t.Error("a team was accepted as an administrator")
	}
}
