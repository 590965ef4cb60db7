package state

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/statediff"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/client"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// current is what the server holds of the sections a state names.
type current struct {
	defs   []ratelimit.Definition
	mems   []ratelimit.Membership
	admins []ratelimit.Admin
}

// listPageSize is the largest page the list routes serve: 100,000
// memberships take 10 round trips instead of 100.
const listPageSize = 10000

// fetch reads the server's definitions, memberships and admins (those
// wanted) concurrently. The three reads are not one snapshot: a write
// landing between them shows in some and not others.
func fetch(ctx context.Context, c *client.Client, defs, mems, admins bool) (current, error) {
	var (
		cur  current
		wg   sync.WaitGroup
		errs [3]error
	)
	if defs {
		wg.Go(func() {
			cur.defs, errs[0] = c.ListAllDefinitions(ctx, client.DefinitionFilter{Limit: listPageSize})
		})
	}
	if mems {
		wg.Go(func() {
			cur.mems, errs[1] = c.ListAllMemberships(ctx, client.MembershipFilter{Limit: listPageSize})
		})
	}
	if admins {
		wg.Go(func() { cur.admins, errs[2] = c.ListAdmins(ctx) })
	}
	wg.Wait()
	return cur, errors.Join(errs[:]...)
}

// planLocal computes, without the server, what an apply of l would report:
// the client dry run. It normalizes the objects with the server's rules
// (internal/validate, without floors, which are the server's configuration)
// and plans them against cur with internal/applydoc, as POST /api/apply
// does. It
// cannot see what only the server checks: floors, refusals to quarantine
// an administrator, and writes that land in between.
//
// Invalid objects are returned as a *validate.Error whose fields name
// their files.
func planLocal(l *Loaded, cur current, prune, quarantine bool, now time.Time) (client.ApplyResult, error) {
	var (
		p     planner
		probs []validate.FieldError
	)
	defs := normalizeAll(l, "definitions", l.Doc.Definitions, &probs, func(d ratelimit.Definition) (ratelimit.Definition, error) {
		d.Scope = "" // read-only, derived
		return validate.Definition(d, validate.Floors{})
	})
	mems := normalizeAll(l, "memberships", l.Doc.Memberships, &probs, validate.Membership)
	admins := normalizeAll(l, "admins", l.Doc.Admins, &probs, validate.Admin)
	if len(probs) > 0 {
		return client.ApplyResult{}, &validate.Error{Errors: probs}
	}
	if defs != nil {
		recordPlan(&p, "definition", applydoc.PlanDefinitions(defs, cur.defs, prune))
	}
	if mems != nil {
		plan, err := applydoc.PlanMemberships(mems, cur.mems, applydoc.MembershipOptions{
			Prune: prune, Quarantine: quarantine, Now: func() time.Time { return now }})
		var qe *applydoc.QuarantineRefusedError
		if errors.As(err, &qe) {
			for _, fe := range qe.Refused {
				fe.Message = l.annotate(fe.Field, fe.Message)
				probs = append(probs, fe)
			}
			return client.ApplyResult{}, &validate.Error{Errors: probs}
		}
		if err != nil {
			return client.ApplyResult{}, err
		}
		p.res.Unchanged += plan.Unchanged
		for _, c := range plan.Changes {
			p.recordMembership(c.ID, c.Old, c.New)
		}
	}
	if admins != nil {
		recordPlan(&p, "admin", applydoc.PlanAdmins(admins, cur.admins, prune))
	}
	slices.SortFunc(p.res.Changes, func(a, b client.ApplyChange) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ID, b.ID))
	})
	p.res.DryRun = true
	// The server's values arrive as decoded JSON (numbers as float64,
	// times as strings); a round trip gives the local ones the same form,
	// so both print alike.
	raw, err := json.Marshal(p.res)
	if err != nil {
		return client.ApplyResult{}, err
	}
	var res client.ApplyResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return client.ApplyResult{}, err
	}
	return res, nil
}

// normalizeAll normalizes a present section (nil stays nil), collecting
// problems named by file and field.
func normalizeAll[T any](l *Loaded, section string, items []T, probs *[]validate.FieldError, fn func(T) (T, error)) []T {
	if items == nil {
		return nil
	}
	out := make([]T, len(items))
	for i, it := range items {
		n, err := fn(it)
		if err != nil {
			for _, fe := range validate.Under(fmt.Sprintf("%s[%d]", section, i), err) {
				fe.Message = l.annotate(fe.Field, fe.Message)
				*probs = append(*probs, fe)
			}
			continue
		}
		out[i] = n
	}
	return out
}

// planner accumulates a local ApplyResult.
type planner struct {
	res client.ApplyResult
}

func (p *planner) record(action, kind, id string, fields []client.Change) {
	p.res.Changes = append(p.res.Changes, client.ApplyChange{Action: action, ResourceType: kind, ID: id, Fields: fields})
	switch action {
	case client.ActionCreate:
		p.res.Created++
	case client.ActionUpdate:
		p.res.Updated++
	case client.ActionDelete:
		p.res.Deleted++
	case client.ActionQuarantineAdd:
		p.res.Quarantined++
	case client.ActionQuarantineRemove:
		p.res.Released++
	}
}

// recordMembership records the write of a membership from old to m (nil:
// created, deleted) in the lines statediff.MembershipLines words, as the
// server does.
func (p *planner) recordMembership(id string, old, m *ratelimit.Membership) {
	for _, l := range statediff.MembershipLines(old, m) {
		p.record(l.Action, l.ResourceType, id, clientChanges(l.Fields))
	}
}

// recordPlan records a section's plan (applydoc's, the one the server
// computes) as the server reports it.
func recordPlan[T any](p *planner, kind string, plan applydoc.Plan[T]) {
	p.res.Unchanged += plan.Unchanged
	for _, c := range plan.Changes {
		p.record(c.Action, kind, c.ID, clientChanges(c.Fields))
	}
}

// clientChanges gives statediff's changes the SDK's type.
func clientChanges(cs []statediff.Change) []client.Change {
	if len(cs) == 0 {
		return nil
	}
	out := make([]client.Change, len(cs))
	for i, c := range cs {
		out[i] = client.Change(c)
	}
	return out
}
