package applydoc

import (
	"fmt"
	"time"

	"github.com/rlctl/rlctl/internal/statediff"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// The plan: what an apply of a document's sections does to the current
// state, computed alike by rlapi (POST /api/apply, which then writes it)
// and by rlctl (apply --dry-run=client, which only reports it). Each
// section's plan takes the desired objects, normalized (internal/validate),
// and the stored ones; a section the document leaves out is not planned.

// Actions of a planned change.
const (
	ActionCreate = "create"
	ActionUpdate = "update"
	ActionDelete = "delete"
)

// Change is one object an apply creates, updates or deletes. Old is the
// stored object (nil for a create), New the desired one as it will be
// stored (nil for a delete); the server stamps ids, versions, times and
// authors on New when it writes it. Fields lists what an update of a
// definition or admin changes; a membership's report lines are
// statediff.MembershipLines(Old, New).
type Change[T any] struct {
	Action string
	ID     string
	Old    *T
	New    *T
	Fields []statediff.Change
}

// Plan is a section's changes, in the order of the document then (for a
// prune) of the stored objects, and how many of the desired objects
// already match.
type Plan[T any] struct {
	Changes   []Change[T]
	Unchanged int
}

// PlanDefinitions plans the definitions. With prune, the stored ones the
// document does not name are deleted, except the quarantine kill switches.
func PlanDefinitions(want, cur []ratelimit.Definition, prune bool) Plan[ratelimit.Definition] {
	return plan(want, cur, prune, ratelimit.Definition.Key, func(d ratelimit.Definition) string { return d.ID }, statediff.Definition,
		func(d ratelimit.Definition) bool { return !ratelimit.IsSentinel(d.ID) },
		func(d, old *ratelimit.Definition) {})
}

// PlanAdmins plans the administrators. A grant's creation is the server's
// record: an update keeps the stored created_at and created_by.
func PlanAdmins(want, cur []ratelimit.Admin, prune bool) Plan[ratelimit.Admin] {
	return plan(want, cur, prune, ratelimit.Admin.Key, ratelimit.Admin.Key, statediff.Admin,
		func(ratelimit.Admin) bool { return true },
		func(a, old *ratelimit.Admin) { a.CreatedAt, a.CreatedBy = old.CreatedAt, old.CreatedBy })
}

// plan diffs want against cur, objects named by key (a stored one by
// curKey, its stored id).
func plan[T any](want, cur []T, prune bool, key, curKey func(T) string, diff func(old, n T) []statediff.Change,
	prunable func(T) bool, keep func(n, old *T)) Plan[T] {
	var p Plan[T]
	byID := make(map[string]*T, len(cur))
	for i := range cur {
		byID[curKey(cur[i])] = &cur[i]
	}
	named := make(map[string]bool, len(want))
	for _, n := range want {
		id := key(n)
		named[id] = true
		old := byID[id]
		if old == nil {
			p.Changes = append(p.Changes, Change[T]{Action: ActionCreate, ID: id, New: &n})
			continue
		}
		keep(&n, old)
		fields := diff(*old, n)
		if len(fields) == 0 {
			p.Unchanged++
			continue
		}
		p.Changes = append(p.Changes, Change[T]{Action: ActionUpdate, ID: id, Old: old, New: &n, Fields: fields})
	}
	if prune {
		for i := range cur {
			if id := curKey(cur[i]); !named[id] && prunable(cur[i]) {
				p.Changes = append(p.Changes, Change[T]{Action: ActionDelete, ID: id, Old: &cur[i]})
			}
		}
	}
	return p
}

// MembershipOptions tune PlanMemberships.
type MembershipOptions struct {
	Prune bool
	// Quarantine lets the apply change quarantine (POST
	// /api/apply?quarantine=true, rlctl apply --quarantine); without it,
	// quarantine is left as it is (statediff.LeaveQuarantine).
	Quarantine bool
	// Now starts the quarantines the apply adds.
	Now func() time.Time
	// MaxRefusals bounds the refusals a *QuarantineRefusedError lists (it
	// counts them all); 0 lists them all.
	MaxRefusals int
}

// MembershipPlan is Plan for memberships, with Desired: every membership
// of the document as it will be stored (the server checks those against
// the administrators).
type MembershipPlan struct {
	Plan[ratelimit.Membership]
	Desired []ratelimit.Membership
}

// QuarantineRefusedError refuses an apply that leaves quarantine alone
// but whose memberships would change it: the first of them listed, each
// named memberships[i].groups, all of them counted.
type QuarantineRefusedError struct {
	Refused []validate.FieldError
	Total   int
}

func (e *QuarantineRefusedError) Error() string {
	return fmt.Sprintf("%d memberships would change quarantine", e.Total)
}

// PlanMemberships plans the memberships. Each desired one is stored as
// statediff.StoredMembership words it (quarantine metadata kept
// consistent, times cut to the database's microseconds); only what the
// report can name is a change (a new order of the same groups is not).
// Leaving quarantine alone, a membership that would change it is refused
// (the whole plan, with a *QuarantineRefusedError), and a prune keeps the
// quarantine groups of the memberships it removes.
func PlanMemberships(want, cur []ratelimit.Membership, opts MembershipOptions) (MembershipPlan, error) {
	var (
		p       MembershipPlan
		refused QuarantineRefusedError
	)
	byID := make(map[string]*ratelimit.Membership, len(cur))
	for i := range cur {
		byID[cur[i].ID] = &cur[i]
	}
	named := make(map[string]bool, len(want))
	for i, m := range want {
		id := m.Key()
		named[id] = true
		old := byID[id]
		if !opts.Quarantine {
			var err error
			if m, err = statediff.LeaveQuarantine(m, old); err != nil {
				refused.Total++
				if opts.MaxRefusals == 0 || len(refused.Refused) < opts.MaxRefusals {
					field := fmt.Sprintf("memberships[%d].groups", i)
					refused.Refused = append(refused.Refused, validate.FieldError{Field: field, Message: fmt.Sprintf("%s: %v", field, err)})
				}
				continue
			}
		}
		// The database keeps microseconds; compare what it will keep.
		m = statediff.StoredMembership(m, old, opts.Now())
		m.ID = id
		p.Desired = append(p.Desired, m)
		if old == nil {
			p.Changes = append(p.Changes, Change[ratelimit.Membership]{Action: ActionCreate, ID: id, New: &m})
			continue
		}
		if len(statediff.Membership(*old, m)) == 0 || len(statediff.MembershipLines(old, &m)) == 0 {
			p.Unchanged++
			continue
		}
		p.Changes = append(p.Changes, Change[ratelimit.Membership]{Action: ActionUpdate, ID: id, Old: old, New: &m})
	}
	if refused.Total > 0 {
		return p, &refused
	}
	if opts.Prune {
		for i := range cur {
			old := &cur[i]
			if named[old.ID] {
				continue
			}
			var keep *ratelimit.Membership
			if !opts.Quarantine {
				keep = statediff.PruneLeavingQuarantine(*old)
			}
			switch {
			case keep == nil:
				p.Changes = append(p.Changes, Change[ratelimit.Membership]{Action: ActionDelete, ID: old.ID, Old: old})
			case len(keep.Groups) < len(old.Groups):
				m := *keep
				p.Changes = append(p.Changes, Change[ratelimit.Membership]{Action: ActionUpdate, ID: old.ID, Old: old, New: &m})
			}
		}
	}
	return p, nil
}
