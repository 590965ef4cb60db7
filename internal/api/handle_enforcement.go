package api

import (
	"fmt"
	"net/http"
	"unicode"
	"unicode/utf8"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// enforcementRequest is the body of PUT /api/enforcement.
type enforcementRequest struct {
	Enabled *bool  `json:"enabled"`
	Reason  string `json:"reason"`
}

func (s *Server) handleGetEnforcement() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e, err := s.store.GetEnforcement(r.Context())
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		setETag(w, e.Version)
		encode(w, http.StatusOK, e)
	})
}

// handlePutEnforcement switches enforcement on or off for every replica,
// audited in the same transaction.
func (s *Server) handlePutEnforcement() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[enforcementRequest](w, r, false)
		if err == nil {
			err = checkEnforcementRequest(req)
		}
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		version, err := ifMatch(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		var after ratelimit.Enforcement
		ch, dry, err := s.mutate(r, func(q *store.Queries) (change, error) {
			a, before, changed, err := q.SetEnforcement(r.Context(), *req.Enabled, req.Reason, actorName(r.Context()), version)
			if err != nil {
				return change{}, err
			}
			after = a
			action := "disable"
			if *req.Enabled {
				action = "enable"
			}
			if !changed {
				action = "unchanged"
			}
			return change{action: action, resourceType: "enforcement", id: "enforcement", before: before, after: a}, nil
		})
		s.answer(w, r, ch, dry, err, func() {
			if ch.action != "unchanged" {
				s.log.Warn("enforcement switched "+onOff(after.Enabled)+" for every replica", "actor", actorName(r.Context()),
					"reason", after.Reason, "version", after.Version, "request_id", requestID(r.Context()))
			}
			setETag(w, after.Version)
			encode(w, http.StatusOK, after)
		})
	})
}

func checkEnforcementRequest(req enforcementRequest) error {
	if req.Enabled == nil {
		return badRequest("enabled: is required (true or false)", validate.FieldError{Field: "enabled", Message: "enabled: is required (true or false)"})
	}
	bad := ""
	switch {
	case !utf8.ValidString(req.Reason):
		bad = "reason: must be valid UTF-8"
	case utf8.RuneCountInString(req.Reason) > ratelimit.MaxEnforcementReason:
		bad = fmt.Sprintf("reason: must be at most %d characters (got %d)", ratelimit.MaxEnforcementReason, utf8.RuneCountInString(req.Reason))
	default:
		for _, c := range req.Reason {
			if unicode.IsControl(c) {
				bad = "reason: must not contain control characters"
				break
			}
		}
	}
	if bad != "" {
		return badRequest(bad, validate.FieldError{Field: "reason", Message: bad})
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
