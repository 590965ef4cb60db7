package applydoc_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// summary words a plan as "create:a update:b(fields) delete:c =N".
func summary[T any](p applydoc.Plan[T]) string {
	var out []string
	for _, c := range p.Changes {
		s := c.Action + ":" + c.ID
		if len(c.Fields) > 0 {
			var f []string
			for _, fc := range c.Fields {
				f = append(f, fc.Field)
			}
			s += "(" + strings.Join(f, ",") + ")"
		}
		out = append(out, s)
	}
	return fmt.Sprintf("%s =%d", strings.Join(out, " "), p.Unchanged)
}

func def(name string, limit int) ratelimit.Definition {
	d := ratelimit.Definition{Axis: "caller", EntityType: "group", Name: name, WindowSeconds: 60, UserMaxRequests: &limit, Enabled: true}
	d.ID = d.Key()
	return d
}

func TestPlanDefinitions(t *testing.T) {
	t.Parallel()
	sentinel := ratelimit.Definition{ID: ratelimit.SentinelCallers, Axis: "quarantine", EntityType: "group", Name: "quarantine-callers", WindowSeconds: 1}
	cur := []ratelimit.Definition{def("same", 5), def("changed", 5), def("gone", 5), sentinel}
	want := []ratelimit.Definition{def("same", 5), def("changed", 9), def("new", 5)}
	if got, w := summary(applydoc.PlanDefinitions(want, cur, false)),
		"update:caller:group:changed:60(user_max_requests) create:caller:group:new:60 =1"; got != w {
		t.Errorf("without prune: %s, want %s", got, w)
	}
	// Prune deletes what the document does not name, but never the
	// quarantine kill switches.
	if got, w := summary(applydoc.PlanDefinitions(want, cur, true)),
		"update:caller:group:changed:60(user_max_requests) create:caller:group:new:60 delete:caller:group:gone:60 =1"; got != w {
		t.Errorf("with prune: %s, want %s", got, w)
	}
	if got := summary(applydoc.PlanDefinitions([]ratelimit.Definition{}, cur, true)); strings.Contains(got, ratelimit.SentinelCallers) {
		t.Errorf("an empty section pruned a kill switch: %s", got)
	}
}

func TestPlanAdminsKeepsTheGrantsRecord(t *testing.T) {
	t.Parallel()
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cur := []ratelimit.Admin{{SubjectType: "user", Subject: "root", Note: "old", CreatedAt: &at, CreatedBy: "ops"}, {SubjectType: "user", Subject: "gone"}}
	p := applydoc.PlanAdmins([]ratelimit.Admin{{SubjectType: "user", Subject: "root", Note: "new"}, {SubjectType: "client", Subject: "ci"}}, cur, true)
	if got, w := summary(p), "update:user:root(note) create:client:ci delete:user:gone =0"; got != w {
		t.Errorf("%s, want %s", got, w)
	}
	if n := p.Changes[0].New; n.CreatedBy != "ops" || !n.CreatedAt.Equal(at) {
		t.Errorf("update lost the grant's record: %+v", n)
	}
}

func TestPlanMembershipsLeavesQuarantineAlone(t *testing.T) {
	t.Parallel()
	now := func() time.Time { return time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC) }
	mem := func(subject string, groups ...string) ratelimit.Membership {
		m := ratelimit.Membership{SubjectType: "user", Subject: subject, Groups: groups}
		m.ID = m.Key()
		return m
	}
	q := ratelimit.GroupQuarantineCallers
	cur := []ratelimit.Membership{mem("mallory", "dev", q), mem("eve", q), mem("bob", "dev"), mem("alice", "dev")}
	since := now().Add(-time.Hour)
	cur[0].QuarantinedAt = &since
	want := []ratelimit.Membership{mem("alice", "dev"), mem("carol", "ops")}

	p, err := applydoc.PlanMemberships(want, cur, applydoc.MembershipOptions{Prune: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// mallory is pruned to her quarantine, eve (only quarantined) stays,
	// bob goes.
	if got, w := summary(p.Plan), "create:user:carol update:user:mallory delete:user:bob =1"; got != w {
		t.Errorf("leaving quarantine alone: %s, want %s", got, w)
	}
	if g := p.Changes[1].New.Groups; !slices.Equal(g, []string{q}) {
		t.Errorf("mallory pruned to %v, want her quarantine only", g)
	}
	p, err = applydoc.PlanMemberships(want, cur, applydoc.MembershipOptions{Prune: true, Quarantine: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got, w := summary(p.Plan), "create:user:carol delete:user:mallory delete:user:eve delete:user:bob =1"; got != w {
		t.Errorf("with quarantine: %s, want %s", got, w)
	}

	// Naming a quarantine group the server does not hold is refused,
	// every one counted, the first listed.
	bad := []ratelimit.Membership{mem("bob", "dev", q), mem("alice", q), mem("zed", q)}
	_, err = applydoc.PlanMemberships(bad, cur, applydoc.MembershipOptions{Now: now, MaxRefusals: 2})
	var qe *applydoc.QuarantineRefusedError
	if !errors.As(err, &qe) || qe.Total != 3 || len(qe.Refused) != 2 || qe.Refused[0].Field != "memberships[0].groups" {
		t.Fatalf("refusal %#v, want 3 counted, 2 listed from memberships[0].groups", err)
	}
	// With quarantine, the same is a plan; a new order of the same groups
	// is no change.
	p, err = applydoc.PlanMemberships(append(bad, mem("mallory", q, "dev")), cur, applydoc.MembershipOptions{Quarantine: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got, w := summary(p.Plan), "update:user:bob update:user:alice create:user:zed =1"; got != w {
		t.Errorf("quarantining: %s, want %s", got, w)
	}
	if len(p.Desired) != 4 || p.Desired[2].QuarantinedAt == nil || !p.Desired[2].QuarantinedAt.Equal(now()) {
		t.Errorf("desired %+v, want four, zed quarantined now", p.Desired)
	}
}
