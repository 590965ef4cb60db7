package validate

import (
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestLease(t *testing.T) {
	t.Parallel()
	defs := map[string]ratelimit.Definition{
		"caller": {Axis: "caller", EntityType: "group", Name: "g", WindowSeconds: 60, UserMaxRequests: ptr(60)},
		"target": {Axis: "target", EntityType: "mcp_server", Name: "s", WindowSeconds: 60, MaxRequests: ptr(60)},
		"route":  {Axis: "target", EntityType: "route", Name: "r", WindowSeconds: 60, Paths: []string{"/x/*"}, IPMaxRequests: ptr(10)},
		"tool":   {Axis: "target", EntityType: "mcp_tool", Name: "github:*", WindowSeconds: 60, MaxRequests: ptr(5), ToolScope: "principal_tool"},
		"descriptor": {Axis: "target", EntityType: ratelimit.EntityDescriptor, WindowSeconds: 60, MaxRequests: ptr(5),
			DescriptorFields: ratelimit.DescriptorFields{Domain: "edge", Descriptor: []ratelimit.DescriptorEntry{{Key: "user"}}}},
	}
	for kind, base := range defs {
		for _, lease := range []string{"", "auto", "never", "always"} {
			d := base
			d.Lease = lease
			got, err := Definition(d, DefaultFloors())
			if err != nil {
				t.Errorf("%s lease %q: %v", kind, lease, err)
				continue
			}
			want := lease
			if lease == "auto" {
				want = "" // the default has one spelling
			}
			if got.Lease != want {
				t.Errorf("%s lease %q: normalized to %q, want %q", kind, lease, got.Lease, want)
			}
		}
	}
	for _, bad := range []string{"sometimes", "Never", " always", "off"} {
		d := defs["target"]
		d.Lease = bad
		_, err := Definition(d, DefaultFloors())
		wantProblem(t, err, "lease", `lease: must be one of auto, never, always (got "`+bad+`")`)
	}
	// Where nothing is counted there is nothing to lease: only auto.
	sentinel := ratelimit.Definition{Axis: "quarantine", EntityType: "group", Name: ratelimit.GroupQuarantineCallers, WindowSeconds: 1}
	exempt := ratelimit.Definition{Axis: "target", EntityType: "route", Name: "public", WindowSeconds: 60, Paths: []string{"/docs"}, Exempt: true}
	unlimited := ratelimit.Definition{Axis: "target", EntityType: ratelimit.EntityDescriptor, WindowSeconds: 60,
		DescriptorFields: ratelimit.DescriptorFields{Domain: "edge", Descriptor: []ratelimit.DescriptorEntry{{Key: "internal"}}, Unlimited: true}}
	for _, tc := range []struct {
		name string
		d    ratelimit.Definition
		msg  string
	}{
		{"sentinel", sentinel, `lease: not allowed on the quarantine axis; quarantine blocks outright and counts nothing to lease (got "never")`},
		{"exempt route", exempt, `lease: not allowed on an exempt route: its paths are never counted, so there is nothing to lease (got "never")`},
		{"unlimited descriptor", unlimited, `lease: not allowed on an unlimited descriptor definition: it counts nothing, so there is nothing to lease (got "never")`},
	} {
		d := tc.d
		if _, err := Definition(d, DefaultFloors()); err != nil {
			t.Fatalf("%s without a lease: %v", tc.name, err)
		}
		d.Lease = ratelimit.LeaseAuto
		if got, err := Definition(d, DefaultFloors()); err != nil || got.Lease != "" {
			t.Errorf("%s with lease auto: %+v, %v, want accepted as no lease", tc.name, got.Lease, err)
		}
		d.Lease = ratelimit.LeaseNever
		_, err := Definition(d, DefaultFloors())
		wantProblem(t, err, "lease", tc.msg)
	}
}
