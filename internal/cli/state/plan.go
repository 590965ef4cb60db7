package state

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

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
// and diffs them against cur field by field as POST /api/apply does. It
// cannot see what only the server checks: floors, refusals to quarantine
// an administrator, and writes that land in between.
//
// Invalid objects are returned as a *validate.Error whose fields name
// their files.
func planLocal(l *Loaded, cur current, prune bool, now time.Time) (client.ApplyResult, error) {
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
		p.memberships(mems, cur.mems, prune, now)
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
			path := fmt.Sprintf("%s[%d]", section, i)
			var ve *validate.Error
			if !errors.As(err, &ve) {
				ve = &validate.Error{Errors: []validate.FieldError{{Message: err.Error()}}}
			}
			for _, fe := range ve.Errors {
				field, msg := path, fe.Message
				if fe.Field != "" {
					field += "." + fe.Field
				}
				if fe.Field != "" && strings.HasPrefix(msg, fe.Field) {
					msg = field + msg[len(fe.Field):]
				} else {
					msg = field + ": " + msg
				}
				*probs = append(*probs, validate.FieldError{Field: field, Message: l.annotate(field, msg)})
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
		if fields := definitionFields(old, d); len(fields) > 0 {
			p.record(client.ActionUpdate, "definition", d.ID, fields)
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

func (p *planner) memberships(want, cur []ratelimit.Membership, prune bool, now time.Time) {
	byID := make(map[string]ratelimit.Membership, len(cur))
	for _, m := range cur {
		byID[m.ID] = m
	}
	named := make(map[string]bool, len(want))
	for _, m := range want {
		named[m.ID] = true
		old, ok := byID[m.ID]
		var prev *ratelimit.Membership
		if ok {
			prev = &old
		}
		m = withQuarantineFields(m, prev, now)
		if !ok {
			p.record(client.ActionCreate, "membership", m.ID, nil)
			continue
		}
		if fields := membershipFields(old, m); len(fields) > 0 {
			p.record(client.ActionUpdate, "membership", m.ID, fields)
		} else {
			p.res.Unchanged++
		}
	}
	if prune {
		for _, old := range cur {
			if !named[old.ID] {
				p.record(client.ActionDelete, "membership", old.ID, nil)
			}
		}
	}
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
		switch {
		case !ok:
			p.record(client.ActionCreate, "admin", id, nil)
		case old.Note != a.Note:
			p.record(client.ActionUpdate, "admin", id, []client.Change{{Field: "note", From: textValue(old.Note), To: textValue(a.Note)}})
		default:
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

// withQuarantineFields is what the server stores of a membership's
// quarantine: nothing outside the quarantine groups; inside, the stored
// start time when there is one, else now. Times keep microseconds, as the
// database does.
func withQuarantineFields(m ratelimit.Membership, prev *ratelimit.Membership, now time.Time) ratelimit.Membership {
	if !m.HasGroup(ratelimit.GroupQuarantineCallers) && !m.HasGroup(ratelimit.GroupQuarantineTargets) {
		m.QuarantineReason, m.QuarantinedAt, m.QuarantineExpiresAt = "", nil, nil
		return m
	}
	if prev != nil && prev.QuarantinedAt != nil {
		m.QuarantinedAt = prev.QuarantinedAt
	}
	if m.QuarantinedAt == nil {
		t := now.UTC()
		m.QuarantinedAt = &t
	}
	m.QuarantinedAt, m.QuarantineExpiresAt = toMicros(m.QuarantinedAt), toMicros(m.QuarantineExpiresAt)
	return m
}

func toMicros(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.Truncate(time.Microsecond)
	return &u
}

// definitionFields lists what an update changes, as POST /api/apply names
// it: JSON field names, absent values as nil.
func definitionFields(old, d ratelimit.Definition) []client.Change {
	var out []client.Change
	add := func(field string, from, to any, same bool) {
		if !same {
			out = append(out, client.Change{Field: field, From: from, To: to})
		}
	}
	add("agent_max_requests", intValue(old.AgentMaxRequests), intValue(d.AgentMaxRequests), equalInt(old.AgentMaxRequests, d.AgentMaxRequests))
	add("description", textValue(old.Description), textValue(d.Description), old.Description == d.Description)
	add("enabled", old.Enabled, d.Enabled, old.Enabled == d.Enabled)
	add("fail_closed", old.FailClosed, d.FailClosed, old.FailClosed == d.FailClosed)
	add("max_requests", intValue(old.MaxRequests), intValue(d.MaxRequests), equalInt(old.MaxRequests, d.MaxRequests))
	add("members", listValue(old.Members), listValue(d.Members), slices.Equal(old.Members, d.Members))
	add("mode", textValue(old.Mode), textValue(d.Mode), old.Mode == d.Mode)
	add("user_max_requests", intValue(old.UserMaxRequests), intValue(d.UserMaxRequests), equalInt(old.UserMaxRequests, d.UserMaxRequests))
	return out
}

// membershipFields is definitionFields for memberships.
func membershipFields(old, m ratelimit.Membership) []client.Change {
	var out []client.Change
	add := func(field string, from, to any, same bool) {
		if !same {
			out = append(out, client.Change{Field: field, From: from, To: to})
		}
	}
	add("groups", listValue(old.Groups), listValue(m.Groups), slices.Equal(old.Groups, m.Groups))
	add("quarantine_expires_at", timeValue(old.QuarantineExpiresAt), timeValue(m.QuarantineExpiresAt), equalTime(old.QuarantineExpiresAt, m.QuarantineExpiresAt))
	add("quarantine_reason", textValue(old.QuarantineReason), textValue(m.QuarantineReason), old.QuarantineReason == m.QuarantineReason)
	add("quarantined_at", timeValue(old.QuarantinedAt), timeValue(m.QuarantinedAt), equalTime(old.QuarantinedAt, m.QuarantinedAt))
	return out
}

func intValue(v *int) any {
	if v == nil {
		return nil
	}
	return *v
}

func textValue(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func listValue(l []string) any {
	if len(l) == 0 {
		return nil
	}
	return l
}

func timeValue(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC()
}

func equalInt(a, b *int) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}
