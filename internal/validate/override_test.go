package validate

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestOverride(t *testing.T) {
	t.Parallel()
	premium := ratelimit.Definition{Axis: "caller", EntityType: "group", Name: "premium", WindowSeconds: 60, UserMaxRequests: ptr(100), Override: true}
	if got, err := Definition(premium, DefaultFloors()); err != nil || !got.Override {
		t.Errorf("a group override: override %t (%v), want true", got.Override, err)
	}
	// A definition naming one subject is an override by nature.
	for _, entity := range []string{"user", "client", "team"} {
		d := ratelimit.Definition{Axis: "caller_target", EntityType: entity, Name: " alice@example.com ", WindowSeconds: 60, UserMaxRequests: ptr(30)}
		got, err := Definition(d, DefaultFloors())
		if err != nil || !got.Override || got.Name != "alice@example.com" || got.ID != "caller_target:"+entity+":alice@example.com:60" {
			t.Errorf("%s definition: %+v (%v), want an override named alice@example.com", entity, got, err)
		}
	}
	for _, tc := range []struct {
		name, field, message string
		change               func(*ratelimit.Definition)
	}{
		{"on the target axis", "override", "override: not allowed on the target axis; only caller and caller_target definitions share a caller's bucket",
			func(d *ratelimit.Definition) {
				d.Axis, d.EntityType, d.UserMaxRequests, d.MaxRequests = "target", "mcp_server", nil, ptr(100)
			}},
		{"for everyone", "override", "override: not allowed with everyone: everyone is the least specific level, there is nothing below it to override",
			func(d *ratelimit.Definition) { d.Everyone = true }},
		{"per ip", "override", `override: allowed only with per caller: a bucket kept per ip is the definition's own, no other definition shares it (got per "ip")`,
			func(d *ratelimit.Definition) { d.Per = "ip" }},
		{"in shadow mode", "override", "override: not allowed on a shadow definition: it counts on a bucket of its own, no other definition shares it",
			func(d *ratelimit.Definition) { d.Mode = "shadow" }},
		{"a user definition for everyone", "everyone", "everyone: not allowed on a user definition; it selects the one user its name gives",
			func(d *ratelimit.Definition) { d.EntityType, d.Name, d.Everyone = "user", "alice", true }},
		{"a team definition per shared", "per", `per: must be caller on a team definition; it overrides the caller's own bucket, which only per caller definitions share (got "shared")`,
			func(d *ratelimit.Definition) { d.EntityType, d.Name, d.Per = "team", "acme", "shared" }},
		{"a subject with a '|'", "name", `name: must not contain '|' (got "a|b"): it separates the parts of a counter key`,
			func(d *ratelimit.Definition) { d.EntityType, d.Name = "client", "a|b" }},
		{"a user on the quarantine axis", "entity_type", `entity_type: must be group on the quarantine axis (got "user")`,
			func(d *ratelimit.Definition) {
				d.Axis, d.EntityType, d.Name, d.WindowSeconds, d.UserMaxRequests, d.Override = "quarantine", "user", ratelimit.GroupQuarantineCallers, 1, nil, false
			}},
	} {
		d := premium
		tc.change(&d)
		_, err := Definition(d, DefaultFloors())
		wantProblem(t, err, tc.field, tc.message)
	}
}
