package statediff

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func TestLeaveQuarantine(t *testing.T) {
	t.Parallel()
	mem := func(groups ...string) ratelimit.Membership {
		return ratelimit.Membership{SubjectType: "user", Subject: "mallory", Groups: groups}
	}
	quarantined := mem("developers", ratelimit.GroupQuarantineCallers)
	quarantined.QuarantineReason = "scraping"
	for _, tt := range []struct {
		name       string
		m          ratelimit.Membership
		old        *ratelimit.Membership
		wantGroups []string
		wantReason string
		refused    bool
	}{
		{"no quarantine either side", mem("developers"), ptr(mem("ops")), []string{"developers"}, "", false},
		{"the server's quarantine is kept", mem("ops"), &quarantined, []string{"ops", ratelimit.GroupQuarantineCallers}, "scraping", false},
		{"a new subject is not quarantined", mem("ops"), nil, []string{"ops"}, "", false},
		{"naming the same quarantine is fine", mem(ratelimit.GroupQuarantineCallers), &quarantined, []string{ratelimit.GroupQuarantineCallers}, "scraping", false},
		{"quarantining is refused", mem(ratelimit.GroupQuarantineCallers), ptr(mem("developers")), nil, "", true},
		{"quarantining a new subject is refused", mem(ratelimit.GroupQuarantineCallers), nil, nil, "", true},
		{"another reason is refused", func() ratelimit.Membership {
			m := mem(ratelimit.GroupQuarantineCallers)
			m.QuarantineReason = "other"
			return m
		}(), &quarantined, nil, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LeaveQuarantine(tt.m, tt.old)
			var qe *QuarantineChangeError
			if tt.refused {
				if !errors.As(err, &qe) || qe.ID != "user:mallory" {
					t.Fatalf("err = %v, want a QuarantineChangeError for user:mallory", err)
				}
				return
			}
			if err != nil || !slices.Equal(got.Groups, tt.wantGroups) || got.QuarantineReason != tt.wantReason {
				t.Errorf("= %v %q, %v; want %v %q", got.Groups, got.QuarantineReason, err, tt.wantGroups, tt.wantReason)
			}
		})
	}
}

func TestMembershipLines(t *testing.T) {
	t.Parallel()
	mem := func(groups ...string) *ratelimit.Membership {
		return &ratelimit.Membership{SubjectType: "user", Subject: "x", Groups: groups}
	}
	q := ratelimit.GroupQuarantineCallers
	for _, tt := range []struct {
		name   string
		old, m *ratelimit.Membership
		want   string
	}{
		{"created", nil, mem("dev"), "[create membership]"},
		{"quarantined only: no membership line", nil, mem(q), "[add quarantine]"},
		{"created and quarantined", nil, mem("dev", q), "[create membership add quarantine]"},
		{"quarantine added to a membership", mem("dev"), mem("dev", q), "[add quarantine]"},
		{"released", mem("dev", q), mem("dev"), "[remove quarantine]"},
		{"released, only in quarantine", mem(q), nil, "[remove quarantine]"},
		{"groups changed under quarantine", mem("dev", q), mem("ops", q), "[update membership]"},
		{"pruned to its quarantine", mem("dev", q), mem(q), "[delete membership]"},
		{"order only", mem("dev", q), mem(q, "dev"), "[]"},
	} {
		var got []string
		for _, l := range MembershipLines(tt.old, tt.m) {
			got = append(got, l.Action, l.ResourceType)
		}
		if s := fmt.Sprint(got); s != tt.want && !(tt.want == "[]" && len(got) == 0) {
			t.Errorf("%s: %s, want %s", tt.name, s, tt.want)
		}
	}
}
