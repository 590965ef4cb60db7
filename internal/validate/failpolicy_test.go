package validate

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestFailPolicy(t *testing.T) {
	t.Parallel()
	target := ratelimit.Definition{Axis: "target", EntityType: "mcp_server", Name: "s", WindowSeconds: 60, MaxRequests: ptr(60)}
	// What is sent, what is stored: fail_closed and fail_policy in step.
	for _, tc := range []struct {
		name       string
		policy     string
		failClosed bool
		wantPolicy string
		wantClosed bool
	}{
		{"neither: the enforcer's default", "", false, "", false},
		{"fail_closed alone, the older spelling", "", true, "closed", true},
		{"closed alone", "closed", false, "closed", true},
		{"closed, said both ways", "closed", true, "closed", true},
		{"open", "open", false, "open", false},
		{"degrade", "degrade", false, "degrade", false},
	} {
		d := target
		d.FailPolicy, d.FailClosed = tc.policy, tc.failClosed
		got, err := Definition(d, DefaultFloors())
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.FailPolicy != tc.wantPolicy || got.FailClosed != tc.wantClosed {
			t.Errorf("%s: fail_policy %q fail_closed %t, want %q and %t", tc.name, got.FailPolicy, got.FailClosed, tc.wantPolicy, tc.wantClosed)
		}
	}
	for _, bad := range []string{"Closed", "deny", " open", "fail-open"} {
		d := target
		d.FailPolicy = bad
		_, err := Definition(d, DefaultFloors())
		wantProblem(t, err, "fail_policy", `fail_policy: must be one of open, closed, degrade, or absent for the enforcer's default (got "`+bad+`")`)
	}
	for _, policy := range []string{"open", "degrade"} {
		d := target
		d.FailPolicy, d.FailClosed = policy, true
		_, err := Definition(d, DefaultFloors())
		wantProblem(t, err, "fail_policy", `fail_policy: "`+policy+`" contradicts fail_closed: true, the older spelling of fail_policy closed; give fail_policy alone`)
	}

	// The sentinels count nothing: no fail policy; the fail_closed the
	// API always took on them is kept as it was sent.
	sentinel := ratelimit.Definition{Axis: "quarantine", EntityType: "group", Name: ratelimit.GroupQuarantineCallers, WindowSeconds: 1}
	for _, closed := range []bool{false, true} {
		d := sentinel
		d.FailClosed = closed
		if got, err := Definition(d, DefaultFloors()); err != nil || got.FailPolicy != "" || got.FailClosed != closed {
			t.Errorf("sentinel with fail_closed %t: fail_policy %q fail_closed %t (%v), want none and %t", closed, got.FailPolicy, got.FailClosed, err, closed)
		}
	}
	for _, policy := range ratelimit.FailPolicies() {
		d := sentinel
		d.FailPolicy = policy
		_, err := Definition(d, DefaultFloors())
		wantProblem(t, err, "fail_policy", `fail_policy: not allowed on the quarantine axis; quarantine blocks outright and counts nothing (got "`+policy+`")`)
	}
}
