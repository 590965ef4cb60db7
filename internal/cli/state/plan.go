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
// and diffs them against cur field by field with internal/statediff, as
// POST /api/apply does. It
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
		p.definitions(defs, cur.defs, prune)
	}
	if mems != nil {
		for _, fe := range p.memberships(mems, cur.mems, prune, quarantine, now) {
			fe.Message = l.annotate(fe.Field, fe.Message)
			probs = append(probs, fe)
		}
		if len(probs) > 0 {
			return client.ApplyResult{}, &validate.Error{Errors: probs}
		}
	}
	if admins != nil {
		p.admins(admins, cur.admins, prune)
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

func (p *planner) definitions(want, cur []ratelimit.Definition, prune bool) {
	byID := make(map[string]ratelimit.Definition, len(cur))
	for _, d := range cur {
		byID[d.ID] = d
	}
	named := make(map[string]bool, len(want))
	for _, d := range want {
		named[d.ID] = true
		old, ok := byID[d.ID]
		if !ok {
			p.record(client.ActionCreate, "definition", d.ID, nil)
			continue
		}
		if fields := statediff.Definition(old, d); len(fields) > 0 {
			p.record(client.ActionUpdate, "definition", d.ID, clientChanges(fields))
		} else {
			p.res.Unchanged++
		}
	}
	if prune {
		for _, old := range cur {
			if !named[old.ID] && !ratelimit.IsSentinel(old.ID) { // the kill switches stay
				p.record(client.ActionDelete, "definition", old.ID, nil)
			}
		}
	}
}

// memberships plans as the server's planMemberships does, and returns
// the memberships refused for changing quarantine while it is left alone.
func (p *planner) memberships(want, cur []ratelimit.Membership, prune, quarantine bool, now time.Time) []validate.FieldError {
	byID := make(map[string]ratelimit.Membership, len(cur))
	for _, m := range cur {
		byID[m.ID] = m
	}
	var refused []validate.FieldError
	named := make(map[string]bool, len(want))
	for i, m := range want {
		named[m.ID] = true
		old, ok := byID[m.ID]
		var prev *ratelimit.Membership
		if ok {
			prev = &old
		}
		if !quarantine {
			var err error
			if m, err = statediff.LeaveQuarantine(m, prev); err != nil {
				field := fmt.Sprintf("memberships[%d].groups", i)
				refused = append(refused, validate.FieldError{Field: field, Message: fmt.Sprintf("%s: %v", field, err)})
				continue
			}
		}
		m = statediff.StoredMembership(m, prev, now)
		if !ok {
			p.recordMembership(m.ID, nil, &m)
			continue
		}
		if len(statediff.Membership(old, m)) > 0 && len(statediff.MembershipLines(prev, &m)) > 0 {
			p.recordMembership(m.ID, prev, &m)
		} else {
			p.res.Unchanged++
		}
	}
	if prune && len(refused) == 0 {
		for _, old := range cur {
			if named[old.ID] {
				continue
			}
			var keep *ratelimit.Membership
			if !quarantine {
				keep = statediff.PruneLeavingQuarantine(old)
			}
			if keep == nil || len(keep.Groups) < len(old.Groups) {
				p.recordMembership(old.ID, &old, keep)
			}
		}
	}
	return refused
}

func (p *planner) admins(want, cur []ratelimit.Admin, prune bool) {
	byID := make(map[string]ratelimit.Admin, len(cur))
	for _, a := range cur {
		byID[a.Key()] = a
	}
	named := make(map[string]bool, len(want))
	for _, a := range want {
		id := a.Key()
		named[id] = true
		old, ok := byID[id]
		if !ok {
			p.record(client.ActionCreate, "admin", id, nil)
			continue
		}
		if fields := statediff.Admin(old, a); len(fields) > 0 {
			p.record(client.ActionUpdate, "admin", id, clientChanges(fields))
		} else {
			p.res.Unchanged++
		}
	}
	if prune {
		for _, old := range cur {
			if id := old.Key(); !named[id] {
				p.record(client.ActionDelete, "admin", id, nil)
			}
		}
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
