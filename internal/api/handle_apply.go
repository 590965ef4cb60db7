package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/statediff"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// POST /api/apply: declarative apply (kubectl apply, decK sync). The body
// is the desired state; the server is made to match it in one transaction,
// with one audit row per object it creates, updates or deletes. A dry run
// does all of it and rolls back, so "diff" and "apply" are one code path.
//
// Nothing makes a round trip per object: the current state is read with one
// query per table, diffed in Go, and the changes are written with COPY and
// set-based statements (internal/store/apply.go).

// maxApplyBody caps an apply's body (applydoc.MaxBody says why; rlctl
// refuses larger files before it reads them).
const maxApplyBody = applydoc.MaxBody

// minApplyTimeout is the least time an apply's database work gets. The
// routes' RequestTimeout (10 s by default) is sized for one-row writes.
const minApplyTimeout = 5 * time.Minute

// Resource types of an apply, in the order the request names them.
const (
	kindDefinition = "definition"
	kindMembership = "membership"
	kindAdmin      = "admin"
)

// applyRequest is the decoded body (applydoc.Decode): its sections (nil:
// absent, left alone) and flags.
type applyRequest = applydoc.Result

func (s *Server) handleApply() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dryQuery, err := dryRun(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		req, err := decodeApply(http.MaxBytesReader(w, r.Body, maxApplyBody), s.cfg.Floors)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if req.Total > 0 {
			s.writeProblem(w, r, applyInvalid(req))
			return
		}
		dry := dryQuery || req.DryRun
		quarantine, err := boolQuery(r, "quarantine")
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}

		ctx, cancel := s.applyContext(r)
		defer cancel()
		a := applier{actor: actorName(r.Context()), requestID: requestID(r.Context()), now: s.now, quarantine: quarantine}
		var res wire.ApplyResult
		err = s.store.InTx(ctx, func(q *store.Queries) error {
			a.q = q
			var err error
			if res, err = a.apply(ctx, req); err != nil {
				return err
			}
			if dry {
				return errDryRun
			}
			return nil
		})
		if err != nil && !errors.Is(err, errDryRun) {
			s.writeProblem(w, r, err)
			return
		}
		res.DryRun = dry
		encode(w, http.StatusOK, res)
	})
}

// boolQuery reads an optional true/false query parameter.
func boolQuery(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest(fmt.Sprintf("%s: must be true or false (got %q)", name, v))
	}
	return b, nil
}

// applyContext gives the apply its own deadline, at least minApplyTimeout:
// the route's RequestTimeout would cut a large apply short. The request's
// cancellation still ends it when the client goes away (or the server shuts
// down) before the route's deadline; after that deadline a disconnect is no
// longer seen, and the apply runs to its own end, as any write whose answer
// was lost.
func (s *Server) applyContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), max(s.cfg.RequestTimeout, minApplyTimeout))
	stop := context.AfterFunc(r.Context(), func() {
		if !errors.Is(r.Context().Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return ctx, func() { stop(); cancel() }
}

// maxApplyProblems bounds the problems an apply answer lists (and the
// server holds while reading the body): past it, problems are only counted.
// A body of a million bad elements once kept an error per element, some
// 900 MB for 2 MB of JSON.
const maxApplyProblems = 100

// decodeApply reads the body with applydoc.Decode: as a stream, one
// object at a time, so the raw body is never held whole, validating and
// normalizing each object as it arrives with the same rules as the
// per-object endpoints (validate), also finding duplicate ids. Malformed
// JSON ends it with an error; an object of the wrong shape (a wrong type,
// an unknown field) or one that fails validation is a problem, named by its
// place in the request ("definitions[12].user_max_requests"), and reading
// goes on so the answer lists the problems at once. Once there is a problem
// the apply is refused, so objects are no longer kept: what the server
// holds for a body of junk is bounded by maxApplyProblems, whatever its
// size.
func decodeApply(body io.Reader, floors validate.Floors) (applyRequest, error) {
	req, err := applydoc.Decode(body, applydoc.Options{Mode: applydoc.ModeRequest,
		Validate: true, Floors: floors, MaxProblems: maxApplyProblems})
	var fe *applydoc.FatalError
	switch {
	case err == nil:
		return req, nil
	case errors.As(err, &fe) && fe.Err == nil && fe.Field == "":
		return req, badRequest(fe.Message)
	case errors.As(err, &fe) && fe.Err == nil:
		return req, badRequest(fe.Message, validate.FieldError{Field: fe.Field, Message: fe.Message})
	case errors.As(err, &fe):
		return req, streamError(fe.Err)
	}
	return req, streamError(err)
}

// streamError answers a body that cannot be read on: too large or not JSON.
func streamError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return errorf(http.StatusRequestEntityTooLarge, "too-large", "Request body too large",
			fmt.Sprintf("request body exceeds %d bytes", maxApplyBody))
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return decodeError(err)
}

// maxDetailProblems bounds how many messages the detail repeats; errors
// lists up to maxApplyProblems.
const maxDetailProblems = 10

func applyInvalid(req applyRequest) error {
	shown := req.Problems[:min(len(req.Problems), maxDetailProblems)]
	msgs := make([]string, 0, len(shown))
	for _, p := range shown {
		msgs = append(msgs, p.Message)
	}
	detail := strings.Join(msgs, "; ")
	if req.Total > 1 {
		detail = fmt.Sprintf("%d problems; nothing was applied: %s", req.Total, detail)
	}
	if more := req.Total - len(shown); more > 0 {
		detail += fmt.Sprintf("; and %d more", more)
		if omitted := req.Total - len(req.Problems); omitted > 0 {
			detail += fmt.Sprintf(" (errors lists the first %d)", len(req.Problems))
		} else {
			detail += " (see errors)"
		}
	}
	return &httpError{status: http.StatusBadRequest, kind: "validation", title: "Invalid request", detail: detail,
		fields: req.Problems, omitted: req.Total - len(req.Problems)}
}

// applier runs one apply inside its transaction.
type applier struct {
	q         *store.Queries
	actor     string
	requestID string
	now       func() time.Time // quarantine start times, as the quarantine endpoints use
	// quarantine lets the apply change quarantine (?quarantine=true);
	// without it, quarantine is left as it is (statediff.LeaveQuarantine).
	quarantine bool

	txNow   time.Time
	entries []applyEntry
	res     wire.ApplyResult
}

// applyEntry is one change with its audit row and the report's lines for
// it (the change itself, or for a membership statediff.MembershipLines).
type applyEntry struct {
	change wire.ApplyChange
	before any
	after  any
	lines  []wire.ApplyChange
}

func (a *applier) record(action, kind, id string, before, after any, fields []statediff.Change) {
	a.recordLines(action, kind, id, before, after, []wire.ApplyChange{{Action: action, ResourceType: kind, ID: id, Fields: fields}})
}

// recordMembership records the write of a membership from old to m (nil:
// created, deleted), reported as statediff.MembershipLines words it.
func (a *applier) recordMembership(action string, old, m *ratelimit.Membership) {
	id, before, after := "", any(nil), any(nil)
	if old != nil {
		id, before = old.Key(), *old
	}
	if m != nil {
		id, after = m.Key(), *m
	}
	var lines []wire.ApplyChange
	for _, l := range statediff.MembershipLines(old, m) {
		lines = append(lines, wire.ApplyChange{Action: l.Action, ResourceType: l.ResourceType, ID: id, Fields: l.Fields})
	}
	a.recordLines(action, kindMembership, id, before, after, lines)
}

func (a *applier) recordLines(action, kind, id string, before, after any, lines []wire.ApplyChange) {
	a.entries = append(a.entries, applyEntry{
		change: wire.ApplyChange{Action: action, ResourceType: kind, ID: id},
		before: before, after: after, lines: lines,
	})
	for _, l := range lines {
		switch l.Action {
		case "create":
			a.res.Created++
		case "update":
			a.res.Updated++
		case "delete":
			a.res.Deleted++
		case statediff.ActionQuarantineAdd:
			a.res.Quarantined++
		case statediff.ActionQuarantineRemove:
			a.res.Released++
		}
	}
}

// apply locks, reads, diffs, checks and writes. It returns an error (and
// the transaction rolls back) for anything it refuses.
func (a *applier) apply(ctx context.Context, req applyRequest) (wire.ApplyResult, error) {
	if err := a.q.LockForApply(ctx); err != nil {
		return wire.ApplyResult{}, err
	}
	var err error
	if a.txNow, err = a.q.TransactionTime(ctx); err != nil {
		return wire.ApplyResult{}, err
	}

	var (
		defs        defPlan
		mems        memPlan
		admins      adminPlan
		curAdmins   []ratelimit.Admin
		adminReadOK = true
	)
	if req.Doc.Definitions != nil {
		cur, err := a.q.AllDefinitions(ctx)
		if err != nil {
			return wire.ApplyResult{}, err
		}
		defs = a.planDefinitions(req.Doc.Definitions, cur, req.Prune)
	}
	var curMems []ratelimit.Membership
	if req.Doc.Memberships != nil {
		if curMems, err = a.q.AllMemberships(ctx); err != nil {
			return wire.ApplyResult{}, err
		}
		if mems, err = a.planMemberships(req.Doc.Memberships, curMems, req.Prune); err != nil {
			return wire.ApplyResult{}, err
		}
	} else if req.Doc.Admins != nil {
		// Only the memberships that could clash with a new admin.
		if curMems, err = a.q.ListMemberships(ctx, store.MembershipFilter{Group: ratelimit.GroupQuarantineCallers}); err != nil {
			return wire.ApplyResult{}, err
		}
	}
	if req.Doc.Memberships != nil || req.Doc.Admins != nil {
		if curAdmins, err = a.q.AllAdmins(ctx); err != nil {
			// Quarantine fails closed: the check below answers 503.
			if !quarantinesCallers(mems.desired) {
				return wire.ApplyResult{}, err
			}
			adminReadOK = false
		}
	}
	if req.Doc.Admins != nil && adminReadOK {
		admins = a.planAdmins(req.Doc.Admins, curAdmins, req.Prune)
	}
	if err := a.checkAdminQuarantine(req, curMems, curAdmins, adminReadOK, mems, admins); err != nil {
		return wire.ApplyResult{}, err
	}

	q := a.q
	for _, step := range []func() error{
		func() error { return q.DeleteDefinitions(ctx, defs.deletes) },
		func() error { return q.UpdateDefinitions(ctx, defs.updates) },
		func() error { return q.InsertDefinitions(ctx, defs.creates) },
		func() error { return q.DeleteMemberships(ctx, mems.deletes) },
		func() error { return q.UpdateMemberships(ctx, mems.updates) },
		func() error { return q.InsertMemberships(ctx, mems.creates) },
		func() error { return q.DeleteAdmins(ctx, admins.deletes) },
		func() error { return q.UpdateAdmins(ctx, admins.updates) },
		func() error { return q.InsertAdmins(ctx, admins.creates) },
	} {
		if err := step(); err != nil {
			return wire.ApplyResult{}, err
		}
	}

	slices.SortFunc(a.entries, func(x, y applyEntry) int {
		return cmp.Or(cmp.Compare(x.change.ResourceType, y.change.ResourceType), cmp.Compare(x.change.ID, y.change.ID))
	})
	audits := make([]store.Audit, len(a.entries))
	a.res.Changes = []wire.ApplyChange{}
	for i, e := range a.entries {
		a.res.Changes = append(a.res.Changes, e.lines...)
		audits[i] = store.Audit{Actor: a.actor, Action: e.change.Action, ResourceType: e.change.ResourceType,
			ResourceID: e.change.ID, Before: e.before, After: e.after, RequestID: a.requestID}
	}
	if err := q.InsertAudits(ctx, audits); err != nil {
		return wire.ApplyResult{}, err
	}
	slices.SortStableFunc(a.res.Changes, func(x, y wire.ApplyChange) int {
		return cmp.Or(cmp.Compare(x.ResourceType, y.ResourceType), cmp.Compare(x.ID, y.ID))
	})
	return a.res, nil
}

// quarantinesCallers reports whether any of ms puts a caller in
// quarantine-callers.
func quarantinesCallers(ms []ratelimit.Membership) bool {
	return slices.ContainsFunc(ms, func(m ratelimit.Membership) bool {
		return isCaller(m.SubjectType) && m.HasGroup(ratelimit.GroupQuarantineCallers)
	})
}

func isCaller(subjectType string) bool {
	return subjectType == ratelimit.SubjectUser || subjectType == ratelimit.SubjectClient
}

// The plans below are applydoc's (the one plan rlctl's client dry run
// computes too), stamped with what the server sets: ids, versions, the
// transaction's time and the actor.

type defPlan struct {
	creates, updates []ratelimit.Definition
	deletes          []string
}

func (a *applier) planDefinitions(want, cur []ratelimit.Definition, prune bool) defPlan {
	var p defPlan
	plan := applydoc.PlanDefinitions(want, cur, prune)
	a.res.Unchanged += plan.Unchanged
	for _, c := range plan.Changes {
		switch c.Action {
		case applydoc.ActionCreate:
			d := *c.New
			d.ID, d.UpdatedAt, d.UpdatedBy = c.ID, &a.txNow, a.actor
			d.CreatedAt, d.Version = &a.txNow, 1
			p.creates = append(p.creates, d)
			a.record("create", kindDefinition, c.ID, nil, d, nil)
		case applydoc.ActionUpdate:
			d := *c.New
			d.ID, d.UpdatedAt, d.UpdatedBy = c.ID, &a.txNow, a.actor
			d.CreatedAt, d.Version = c.Old.CreatedAt, c.Old.Version+1
			p.updates = append(p.updates, d)
			a.record("update", kindDefinition, c.ID, *c.Old, d, c.Fields)
		case applydoc.ActionDelete:
			p.deletes = append(p.deletes, c.ID)
			a.record("delete", kindDefinition, c.ID, *c.Old, nil, nil)
		}
	}
	return p
}

type memPlan struct {
	creates, updates []ratelimit.Membership
	deletes          []string
	desired          []ratelimit.Membership // every membership of the file, as it will be stored
}

func (a *applier) planMemberships(want, cur []ratelimit.Membership, prune bool) (memPlan, error) {
	var p memPlan
	plan, err := applydoc.PlanMemberships(want, cur, applydoc.MembershipOptions{
		Prune: prune, Quarantine: a.quarantine, Now: a.now, MaxRefusals: maxQuarantineRefusals})
	var qe *applydoc.QuarantineRefusedError
	if errors.As(err, &qe) {
		return p, quarantineRefused(qe.Refused, qe.Total)
	}
	if err != nil {
		return p, err
	}
	p.desired = plan.Desired
	a.res.Unchanged += plan.Unchanged
	for _, c := range plan.Changes {
		switch c.Action {
		case applydoc.ActionCreate:
			m := *c.New
			m.ID, m.UpdatedAt = c.ID, &a.txNow
			m.CreatedAt, m.Version = &a.txNow, 1
			p.creates = append(p.creates, m)
			a.recordMembership("create", nil, &m)
		case applydoc.ActionUpdate: // from the file, or pruned to its quarantine
			m := *c.New
			m.ID, m.UpdatedAt = c.ID, &a.txNow
			m.CreatedAt, m.Version = c.Old.CreatedAt, c.Old.Version+1
			p.updates = append(p.updates, m)
			a.recordMembership("update", c.Old, &m)
		case applydoc.ActionDelete:
			p.deletes = append(p.deletes, c.ID)
			a.recordMembership("delete", c.Old, nil)
		}
	}
	return p, nil
}

// maxQuarantineRefusals bounds the memberships a refusal lists, however
// many of the request's change quarantine.
const maxQuarantineRefusals = 100

// quarantineRefused is the 400 for memberships that would change
// quarantine while the apply leaves it alone: the first of them listed,
// all of them counted.
func quarantineRefused(refused []validate.FieldError, total int) error {
	shown := refused[:min(len(refused), 3)]
	msgs := make([]string, len(shown))
	for i, fe := range shown {
		msgs[i] = fe.Message
	}
	detail := strings.Join(msgs, "; ")
	if total > 1 {
		detail = fmt.Sprintf("%d memberships would change quarantine; nothing was applied: %s", total, detail)
	}
	if more := total - len(shown); more > 0 {
		detail += fmt.Sprintf("; and %d more", more)
	}
	return &httpError{status: http.StatusBadRequest, kind: "validation", title: "Invalid request", detail: detail, fields: refused}
}

type adminPlan struct {
	creates, updates []ratelimit.Admin
	deletes          []string
}

func (a *applier) planAdmins(want, cur []ratelimit.Admin, prune bool) adminPlan {
	var p adminPlan
	plan := applydoc.PlanAdmins(want, cur, prune)
	a.res.Unchanged += plan.Unchanged
	for _, c := range plan.Changes {
		switch c.Action {
		case applydoc.ActionCreate:
			ad := *c.New
			ad.CreatedAt, ad.CreatedBy = &a.txNow, a.actor
			p.creates = append(p.creates, ad)
			a.record("create", kindAdmin, c.ID, nil, ad, nil)
		case applydoc.ActionUpdate:
			p.updates = append(p.updates, *c.New)
			a.record("update", kindAdmin, c.ID, *c.Old, *c.New, c.Fields)
		case applydoc.ActionDelete:
			p.deletes = append(p.deletes, c.ID)
			a.record("delete", kindAdmin, c.ID, *c.Old, nil, nil)
		}
	}
	return p
}

// checkAdminQuarantine enforces, on the state the apply leaves, that no
// administrator is in quarantine-callers: ratelimit.ErrAdminQuarantine (as
// refuseAdminQuarantine) when the file quarantines an administrator,
// ratelimit.ErrQuarantinedAdmin (as an admin grant) when it makes a
// quarantined subject an administrator, 503 when the administrators could
// not be read.
func (a *applier) checkAdminQuarantine(req applyRequest, curMems []ratelimit.Membership, curAdmins []ratelimit.Admin,
	adminReadOK bool, mems memPlan, admins adminPlan) error {
	// The administrators after this apply.
	final := make(map[string]bool, len(curAdmins))
	for _, ad := range curAdmins {
		final[ad.Key()] = true
	}
	for _, id := range admins.deletes {
		delete(final, id)
	}
	granted := map[string]bool{}
	for _, ad := range admins.creates {
		final[ad.Key()], granted[ad.Key()] = true, true
	}

	// Quarantined callers the file names.
	var refused []ratelimit.Membership
	for _, m := range mems.desired {
		if isCaller(m.SubjectType) && m.HasGroup(ratelimit.GroupQuarantineCallers) {
			if !adminReadOK {
				return adminCheckFailed(m.Subject, "nothing was applied")
			}
			if final[m.Key()] {
				refused = append(refused, m)
			}
		}
	}
	if len(refused) > 0 {
		return ratelimit.AdminQuarantineError(refused[0].SubjectType, refused[0].Subject, len(refused)-1)
	}

	// Quarantines the apply keeps (not in the file, not pruned) against
	// the administrators it grants.
	if len(granted) == 0 || (req.Doc.Memberships != nil && req.Prune) {
		return nil
	}
	inFile := make(map[string]bool, len(mems.desired))
	for _, m := range mems.desired {
		inFile[m.Key()] = true
	}
	for _, m := range curMems {
		if !inFile[m.Key()] && granted[m.Key()] && m.HasGroup(ratelimit.GroupQuarantineCallers) {
			return ratelimit.QuarantinedAdminError(m.SubjectType, m.Subject)
		}
	}
	return nil
}
