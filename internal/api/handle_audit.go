package api

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// defaultAuditPage keeps an unbounded audit query from reading the whole log.
const defaultAuditPage = 100

func (s *Server) handleListAudit() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, err := listLimit(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		if limit == 0 {
			limit = defaultAuditPage
		}
		f := store.AuditFilter{Resource: q.Get("resource"), Actor: q.Get("actor"), Limit: limit + 1}
		if v := q.Get("since"); v != "" {
			if f.Since, err = time.Parse(time.RFC3339, v); err != nil {
				s.writeProblem(w, r, badRequest(fmt.Sprintf("since: must be an RFC 3339 time such as 2026-01-02T15:04:05Z (got %q)", v)))
				return
			}
		}
		for name, dst := range map[string]*int64{"cursor": &f.Before, "after": &f.After} {
			if v := q.Get(name); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil || n < 0 {
					s.writeProblem(w, r, badRequest(fmt.Sprintf("%s: must be an audit entry id (got %q)", name, v)))
					return
				}
				*dst = n
			}
		}
		entries, err := s.store.ListAudit(r.Context(), f)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		page := wire.AuditPage{Entries: entries}
		if len(entries) > limit {
			page.Entries = entries[:limit]
			if f.After == 0 {
				page.NextCursor = strconv.FormatInt(entries[limit-1].ID, 10)
			}
		}
		if page.Entries == nil {
			page.Entries = []ratelimit.AuditEntry{}
		}
		listWriteDeadline(w)
		encode(w, http.StatusOK, page)
	})
}
