package api

import (
	"fmt"
	"net/http"

	"github.com/rlctl/rlctl/internal/statediff"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// subjectID parses a <subject_type>:<subject> URL id into its normalized
// parts.
func subjectID(r *http.Request) (raw, subjectType, subject string, err error) {
	raw = r.PathValue("id")
	canonical, err := validate.MembershipID(raw)
	if err != nil {
		return raw, "", "", err
	}
	subjectType, subject, err = ratelimit.ParseMembershipID(canonical)
	return raw, subjectType, subject, err
}

func (s *Server) handleGetMembership() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, typ, subj, err := subjectID(r)
		if err != nil {
			s.writeProblem(w, r, notFound("membership", raw))
			return
		}
		m, err := s.store.GetMembership(r.Context(), typ, subj)
		if err != nil {
			s.writeProblem(w, r, orNotFound(err, "membership", ratelimit.MembershipID(typ, subj)))
			return
		}
		setETag(w, m.Version)
		encode(w, http.StatusOK, m)
	})
}

func (s *Server) handleListMemberships() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, err := listLimit(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		f := store.MembershipFilter{Group: q.Get("group"), SubjectType: q.Get("subject_type"), After: q.Get("cursor")}
		streamList(s, w, r, "memberships", limit, f.After, func(after string, n int) ([]ratelimit.Membership, error) {
			f.After, f.Limit = after, n
			return s.store.ListMemberships(r.Context(), f)
		}, func(m ratelimit.Membership) string { return m.ID })
	})
}

func (s *Server) handlePutMembership() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.PathValue("id")
		body, err := decode[ratelimit.Membership](w, r, false)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		// "groups": [] (not a missing groups) is no membership.
		noGroups := body.Groups != nil && len(body.Groups) == 0
		var m ratelimit.Membership
		if noGroups {
			m, err = validate.NoGroups(body)
		} else {
			m, err = validate.Membership(body)
		}
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		urlID, idErr := validate.MembershipID(raw)
		if idErr != nil || urlID != m.Key() {
			msg := fmt.Sprintf("URL id %q does not match the id built from the body %q", raw, m.Key())
			s.writeProblem(w, r, badRequest(msg, validate.FieldError{Field: "id", Message: "id: " + msg}))
			return
		}
		version, err := ifMatch(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if noGroups {
			s.deleteNoGroups(w, r, m, version)
			return
		}
		var res store.PutResult[ratelimit.Membership]
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			if err := q.LockSubject(r.Context(), m.SubjectType, m.Subject); err != nil {
				return change{}, err
			}
			if m.HasGroup(ratelimit.GroupQuarantineCallers) {
				if err := refuseAdminQuarantine(r, q, m.SubjectType, m.Subject); err != nil {
					return change{}, err
				}
			}
			before, err := q.GetMembership(r.Context(), m.SubjectType, m.Subject)
			var prev *ratelimit.Membership
			if err == nil {
				prev = &before
			} else if !isNotFoundErr(err) {
				return change{}, err
			}
			m = statediff.WithQuarantineFields(m, prev, s.now())
			res, err = q.PutMembership(r.Context(), m, store.Write{IfVersion: version})
			if err != nil {
				return change{}, err
			}
			return putChange("membership", m.Key(), res), nil
		})
		s.answer(w, r, ch, dry, err, func() {
			writePut(w, r, "/api/rate-limit-memberships/", m.Key(), res.After.Version, res.Created() && !res.Unchanged, res.After)
		})
	})
}

// deleteNoGroups answers a PUT of a membership with "groups": [], as the
// reference does and rlctl member set --groups "" always has: a subject in
// no group is one without a membership, so its membership is deleted (200
// {"deleted":true}) or there was none ({"deleted":false}, no audit row). A
// quarantined subject is refused: that would release it, which is DELETE
// /api/rate-limit-quarantine's job.
func (s *Server) deleteNoGroups(w http.ResponseWriter, r *http.Request, m ratelimit.Membership, version int64) {
	id := m.Key()
	found := false
	ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
		ctx := r.Context()
		if err := q.LockSubject(ctx, m.SubjectType, m.Subject); err != nil {
			return change{}, err
		}
		before, err := q.GetMembership(ctx, m.SubjectType, m.Subject)
		if isNotFoundErr(err) {
			return change{action: "unchanged", resourceType: "membership", id: id}, nil
		}
		if err != nil {
			return change{}, err
		}
		if before.HasGroup(ratelimit.GroupQuarantineCallers) || before.HasGroup(ratelimit.GroupQuarantineTargets) {
			return change{}, errorf(http.StatusConflict, "quarantined", "Subject is quarantined",
				fmt.Sprintf(`'%s' is quarantined: "groups": [] would release it; remove the quarantine (DELETE /api/rate-limit-quarantine/%s) first`, id, id))
		}
		if _, err := q.DeleteMembership(ctx, m.SubjectType, m.Subject, store.Write{IfVersion: version}); err != nil {
			return change{}, orNotFound(err, "membership", id)
		}
		found = true
		return change{action: "delete", resourceType: "membership", id: id, before: before}, nil
	})
	s.answer(w, r, ch, dry, err, func() {
		encode(w, http.StatusOK, wire.Deleted{Deleted: found, ID: id})
	})
}

func (s *Server) handleDeleteMembership() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, typ, subj, err := subjectID(r)
		if err != nil {
			s.writeProblem(w, r, notFound("membership", raw))
			return
		}
		version, err := ifMatch(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		id := ratelimit.MembershipID(typ, subj)
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			before, err := q.DeleteMembership(r.Context(), typ, subj, store.Write{IfVersion: version})
			if err != nil {
				return change{}, orNotFound(err, "membership", id)
			}
			return change{action: "delete", resourceType: "membership", id: id, before: before}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			encode(w, http.StatusOK, wire.Deleted{Deleted: true, ID: id})
		})
	})
}

// refuseAdminQuarantine returns ratelimit.ErrAdminQuarantine (403) for an
// administrator and a 503 when that cannot be known: quarantine fails
// closed, so an operator can never lock the administrators out. Call it under LockSubject, in the transaction of
// the write, so a concurrent admin grant cannot slip between check and
// write.
func refuseAdminQuarantine(r *http.Request, q *store.Queries, subjectType, subject string) error {
	if subjectType != ratelimit.SubjectUser && subjectType != ratelimit.SubjectClient {
		return nil
	}
	admin, err := q.IsAdmin(r.Context(), subjectType, subject)
	if err != nil {
		return adminCheckFailed(subject, "it was not quarantined")
	}
	if admin {
		return ratelimit.AdminQuarantineError(subjectType, subject, 0)
	}
	return nil
}
