package enforce_test

import (
	"context"
	"slices"
	"testing"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// An override takes the caller's bucket from the less specific
// definitions sharing it, and Explain says so: the winner lists what it
// overrode, each overridden definition names the winner. A team's own
// definition is listed for any caller of the team.
func TestOverridesDecidedAndExplained(t *testing.T) {
	t.Parallel()
	f := newFixture(t, enforce.Options{})
	all := everyone(callerGroup("all", 60, ptr(25), ptr(25)), "")
	premium := callerGroup("premium", 60, ptr(100), nil)
	premium.Override = true
	acme := ratelimit.Definition{Axis: "caller", EntityType: "team", Name: "acme", WindowSeconds: 60,
		UserMaxRequests: ptr(40), Enabled: true, Mode: "enforce", Override: true}
	f.Def(all, premium, acme)
	f.Member("user", "alice", "premium")

	if got := f.Burst(user("alice", "srv"), 101); got != 100 {
		t.Errorf("alice, premium: %d of 101 allowed, want 100", got)
	}
	if got := f.Burst(inTeam(user("bob", "srv"), "acme"), 41); got != 40 {
		t.Errorf("bob of acme: %d of 41 allowed, want acme's 40", got)
	}
	if got := f.Burst(user("carol", "srv"), 26); got != 25 {
		t.Errorf("carol, no override: %d of 26 allowed, want everyone's 25", got)
	}

	p, err := f.E.Explain(context.Background(), user("alice", "srv"))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]enforce.PlannedDefinition{}
	for _, d := range p.Definitions {
		byID[d.Definition.ID] = d
	}
	if w := byID[premium.Key()]; !slices.Equal(w.Overrides, []string{all.Key()}) || w.OverriddenBy != "" || w.OutrankedBy != "" {
		t.Errorf("premium in alice's plan: %+v, want overriding %s", w, all.Key())
	}
	if l := byID[all.Key()]; l.OverriddenBy != premium.Key() || l.OutrankedBy != "" || len(l.Overrides) != 0 {
		t.Errorf("everyone's in alice's plan: %+v, want overridden by %s", l, premium.Key())
	}
	if len(p.Gates) == 0 || p.Gates[0].DefinitionID != premium.Key() || !slices.Equal(p.Gates[0].Overrides, []string{all.Key()}) {
		t.Errorf("alice's gates: %+v, want premium's first, overriding everyone's", p.Gates)
	}

	p, err = f.E.Explain(context.Background(), enforce.Call{Team: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(p.Definitions, func(d enforce.PlannedDefinition) bool {
		return d.Definition.ID == acme.Key() && d.MatchedBy == "team:acme" && d.Gate == -1
	}) {
		t.Errorf("plan of any caller of acme lacks acme's own definition: %+v", p.Definitions)
	}
}
