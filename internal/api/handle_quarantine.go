package api

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/rlctl/rlctl/internal/statediff"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

func entryOf(m ratelimit.Membership, now time.Time) wire.QuarantineEntry {
	return wire.QuarantineEntry{
		ID: m.ID, SubjectType: m.SubjectType, Subject: m.Subject, Reason: m.QuarantineReason,
		QuarantinedAt: m.QuarantinedAt, ExpiresAt: m.QuarantineExpiresAt,
		Expired: m.QuarantineExpiresAt != nil && !now.Before(*m.QuarantineExpiresAt),
	}
}

func (s *Server) handleListQuarantine() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		now := s.now()
		out := wire.QuarantineList{Callers: []wire.QuarantineEntry{}, Targets: []wire.QuarantineEntry{}}
		for group, list := range map[string]*[]wire.QuarantineEntry{
			ratelimit.GroupQuarantineCallers: &out.Callers,
			ratelimit.GroupQuarantineTargets: &out.Targets,
		} {
			err := s.store.EachMembership(ctx, store.MembershipFilter{Group: group}, func(m ratelimit.Membership) error {
				*list = append(*list, entryOf(m, now))
				return nil
			})
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
		}
		for id, enabled := range map[string]*bool{ratelimit.SentinelCallers: &out.CallersEnabled, ratelimit.SentinelTargets: &out.TargetsEnabled} {
			d, err := s.store.GetDefinition(ctx, id)
			if err != nil {
				s.writeProblem(w, r, err)
				return
			}
			*enabled = d.Enabled
		}
		listWriteDeadline(w)
		encode(w, http.StatusOK, out)
	})
}

// maxQuarantine bounds expires_in_seconds at a year: longer is "until
// removed", which is what leaving it out means.
const maxQuarantine = 365 * 24 * 3600

func quarantineGroup(subjectType string) string {
	if subjectType == ratelimit.SubjectServer || subjectType == ratelimit.SubjectAgent {
		return ratelimit.GroupQuarantineTargets
	}
	return ratelimit.GroupQuarantineCallers
}

func (s *Server) handleQuarantine() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, typ, subj, err := subjectID(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		req, err := decode[wire.QuarantineRequest](w, r, true)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if req.ExpiresInSeconds < 0 || req.ExpiresInSeconds > maxQuarantine {
			msg := fmt.Sprintf("expires_in_seconds: must be between 1 and %d, or absent for no expiry (got %d)", maxQuarantine, req.ExpiresInSeconds)
			s.writeProblem(w, r, badRequest(msg, validate.FieldError{Field: "expires_in_seconds", Message: msg}))
			return
		}
		group := quarantineGroup(typ)
		now := s.now().UTC()
		var (
			after   ratelimit.Membership
			created bool
		)
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			ctx := r.Context()
			if err := q.LockSubject(ctx, typ, subj); err != nil {
				return change{}, err
			}
			if err := refuseAdminQuarantine(r, q, typ, subj); err != nil {
				return change{}, err
			}
			m, err := q.GetMembership(ctx, typ, subj)
			var prev *ratelimit.Membership
			switch {
			case err == nil:
				prev = &m
			case isNotFoundErr(err):
				m = ratelimit.Membership{SubjectType: typ, Subject: subj}
			default:
				return change{}, err
			}
			// An expired quarantine still holds the group until removed;
			// quarantining again starts a new one.
			expired := m.QuarantineExpiresAt != nil && !now.Before(*m.QuarantineExpiresAt)
			created = !m.HasGroup(group) || expired
			next := m
			next.Groups = append(slices.Clone(m.Groups), group)
			next.QuarantineReason = req.Reason
			next.QuarantineExpiresAt = nil
			if req.ExpiresInSeconds > 0 {
				t := now.Add(time.Duration(req.ExpiresInSeconds) * time.Second)
				next.QuarantineExpiresAt = &t
			}
			if created {
				// A new quarantine starts now, even if an expired one is replaced.
				next.QuarantinedAt = &now
			}
			next, err = validate.Membership(next)
			if err != nil {
				return change{}, err
			}
			keep := prev
			if expired {
				keep = nil // do not carry the old start time over
			}
			next = statediff.WithQuarantineFields(next, keep, now)
			res, err := q.PutMembership(ctx, next, store.Write{})
			if err != nil {
				return change{}, err
			}
			after = res.After
			ch := change{action: "quarantine", resourceType: "membership", id: next.Key(), before: prev, after: res.After}
			if res.Unchanged {
				ch.action = "unchanged"
			}
			return ch, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			status := http.StatusOK
			if created {
				status = http.StatusCreated
			}
			encode(w, status, entryOf(after, s.now()))
		})
	})
}

func (s *Server) handleUnquarantine() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, typ, subj, err := subjectID(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		id := ratelimit.MembershipID(typ, subj)
		group := quarantineGroup(typ)
		var wasQuarantined bool
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			ctx := r.Context()
			if err := q.LockSubject(ctx, typ, subj); err != nil {
				return change{}, err
			}
			m, err := q.GetMembership(ctx, typ, subj)
			if isNotFoundErr(err) {
				return change{action: "unchanged", resourceType: "membership", id: id}, nil
			}
			if err != nil {
				return change{}, err
			}
			if !m.HasGroup(group) {
				return change{action: "unchanged", resourceType: "membership", id: id, before: m, after: m}, nil
			}
			wasQuarantined = true
			rest := slices.DeleteFunc(slices.Clone(m.Groups), func(g string) bool { return g == group })
			if len(rest) == 0 {
				// Nothing left to say about this subject.
				if _, err := q.DeleteMembership(ctx, typ, subj, store.Write{}); err != nil {
					return change{}, err
				}
				return change{action: "unquarantine", resourceType: "membership", id: id, before: m}, nil
			}
			next := m
			next.Groups = rest
			next = statediff.WithQuarantineFields(next, &m, s.now())
			res, err := q.PutMembership(ctx, next, store.Write{})
			if err != nil {
				return change{}, err
			}
			return change{action: "unquarantine", resourceType: "membership", id: id, before: m, after: res.After}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			encode(w, http.StatusOK, wire.Removed{Removed: wasQuarantined, ID: id})
		})
	})
}
