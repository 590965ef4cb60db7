package api

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

func (s *Server) handleListAdmins() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		admins, err := s.store.ListAdmins(r.Context())
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if admins == nil {
			admins = []ratelimit.Admin{}
		}
		encode(w, http.StatusOK, wire.AdminList{Admins: admins})
	})
}

// adminFromURL builds the admin named by the URL, merging the optional body,
// which must name the same subject when it names one.
func (s *Server) adminFromURL(w http.ResponseWriter, r *http.Request) (ratelimit.Admin, error) {
	raw := r.PathValue("id")
	typ, subj, err := ratelimit.ParseMembershipID(raw)
	if err != nil {
		return ratelimit.Admin{}, badRequest(err.Error())
	}
	body, err := decode[ratelimit.Admin](w, r, true)
	if err != nil {
		return ratelimit.Admin{}, err
	}
	urlAdmin, err := validate.Admin(ratelimit.Admin{SubjectType: typ, Subject: subj})
	if err != nil {
		return ratelimit.Admin{}, err
	}
	if body.SubjectType != "" || body.Subject != "" {
		b, err := validate.Admin(body)
		if err != nil {
			return ratelimit.Admin{}, err
		}
		if b.Key() != urlAdmin.Key() {
			msg := fmt.Sprintf("URL id %q does not match the id built from the body %q", raw, b.Key())
			return ratelimit.Admin{}, badRequest(msg, validate.FieldError{Field: "id", Message: "id: " + msg})
		}
	}
	urlAdmin.Note = body.Note
	return validate.Admin(urlAdmin)
}

func (s *Server) handlePutAdmin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := s.adminFromURL(w, r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var (
			after   ratelimit.Admin
			created bool
		)
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			ctx := r.Context()
			if err := q.LockSubject(ctx, a.SubjectType, a.Subject); err != nil {
				return change{}, err
			}
			m, err := q.GetMembership(ctx, a.SubjectType, a.Subject)
			if err != nil && !isNotFoundErr(err) {
				return change{}, err
			}
			if err == nil && m.HasGroup(ratelimit.GroupQuarantineCallers) {
				return change{}, ratelimit.QuarantinedAdminError(a.SubjectType, a.Subject)
			}
			res, before, err := q.PutAdmin(ctx, a, actorName(ctx))
			if err != nil {
				return change{}, err
			}
			after, created = res, before == nil
			action := "grant"
			if before != nil {
				action = "update"
				if before.Note == res.Note {
					action = "unchanged"
				}
			}
			return change{action: action, resourceType: "admin", id: a.Key(), before: before, after: res}, nil
		})
		switch {
		case err != nil:
			s.writeProblem(w, r, err)
		case dry:
			writeDryRun(w, ch)
		case created:
			w.Header().Set("Location", "/api/rate-limit-admins/"+url.PathEscape(a.Key()))
			encode(w, http.StatusCreated, after)
		default:
			encode(w, http.StatusOK, after)
		}
	})
}

func (s *Server) handleDeleteAdmin() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw := r.PathValue("id")
		typ, subj, err := ratelimit.ParseMembershipID(raw)
		if err != nil {
			s.writeProblem(w, r, notFound("admin", raw))
			return
		}
		if n, err := validate.Subject(typ, subj); err == nil {
			subj = n
		}
		id := ratelimit.MembershipID(typ, subj)
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			if err := q.LockSubject(r.Context(), typ, subj); err != nil {
				return change{}, err
			}
			before, err := q.DeleteAdmin(r.Context(), typ, subj)
			if err != nil {
				return change{}, orNotFound(err, "admin", id)
			}
			return change{action: "revoke", resourceType: "admin", id: id, before: before}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			encode(w, http.StatusOK, wire.Deleted{Deleted: true, ID: id})
		})
	})
}
