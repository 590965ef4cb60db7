package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/token"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

func (s *Server) handleListTokens() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens, err := s.store.ListTokens(r.Context())
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if tokens == nil {
			tokens = []ratelimit.Token{}
		}
		listWriteDeadline(w)
		encode(w, http.StatusOK, wire.TokenList{Tokens: tokens})
	})
}

type createTokenRequest struct {
	Name string `json:"name"`
	Role string `json:"role"`
	// ExpiresInSeconds is nil (absent or null) for a token that never
	// expires; otherwise 1 to MaxTokenLifetimeSeconds.
	ExpiresInSeconds *int64 `json:"expires_in_seconds"`
}

// MaxTokenLifetimeSeconds bounds expires_in_seconds at ten years (of 365
// days): far enough for any rotation policy, and far from the overflow of
// a time.Duration (292 years) that once made a token expire before it was
// created. A token that must never expire leaves the field out.
const MaxTokenLifetimeSeconds = 10 * 365 * 24 * 3600

func (s *Server) handleCreateToken() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[createTokenRequest](w, r, false)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var fields []validate.FieldError
		name, err := validate.TokenName(req.Name)
		if err != nil {
			fields = append(fields, fieldErrors(err, "name")...)
		}
		if err := validate.Role(req.Role); err != nil {
			fields = append(fields, fieldErrors(err, "role")...)
		}
		if e := req.ExpiresInSeconds; e != nil && (*e < 1 || *e > MaxTokenLifetimeSeconds) {
			fields = append(fields, validate.FieldError{Field: "expires_in_seconds",
				Message: fmt.Sprintf("expires_in_seconds: must be between 1 and %d (10 years), or absent for no expiry (got %d)",
					MaxTokenLifetimeSeconds, *e)})
		}
		if len(fields) > 0 {
			s.writeProblem(w, r, &validate.Error{Errors: fields})
			return
		}
		secret, sum := token.New()
		var expires *time.Time
		if req.ExpiresInSeconds != nil {
			t := s.now().Add(time.Duration(*req.ExpiresInSeconds) * time.Second).UTC()
			expires = &t
		}
		var created ratelimit.Token
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			t, err := q.CreateToken(r.Context(), name, req.Role, sum, expires)
			if err != nil {
				return change{}, err
			}
			created = t
			return change{action: "create", resourceType: "token", id: name, after: t}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			w.Header().Set("Cache-Control", "no-store")
			encode(w, http.StatusCreated, wire.CreatedToken{Token: created, Secret: secret})
		})
	})
}

func (s *Server) handleRevokeToken() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			before, err := q.RevokeToken(r.Context(), name, s.now())
			if err != nil {
				return change{}, orNotFound(err, "token", name)
			}
			after := before
			now := s.now()
			after.RevokedAt = &now
			return change{action: "revoke", resourceType: "token", id: name, before: before, after: after}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			// This replica forgets at once; the others on NOTIFY.
			s.tokens.invalidate()
			encode(w, http.StatusOK, wire.RevokedToken{Revoked: true, Name: name})
		})
	})
}

// fieldErrors unpacks a validate error, or wraps any other under field.
func fieldErrors(err error, field string) []validate.FieldError {
	if ve, ok := err.(*validate.Error); ok {
		return ve.Errors
	}
	return []validate.FieldError{{Field: field, Message: err.Error()}}
}
