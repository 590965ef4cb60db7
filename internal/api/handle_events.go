package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce/violations"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// eventSubjectTypes are the types an event's subject has, every one the
// record writes (violations.SubjectTypes), with client as another name
// for agent: a membership calls the caller with a client id a client.
var eventSubjectTypes = append(violations.SubjectTypes(), ratelimit.SubjectClient)

// defaultEventPage keeps an unbounded query from reading the whole record.
const defaultEventPage = 100

// eventFilter reads GET /api/rate-limit-events' query: every parameter at
// fault is named in one 400.
func eventFilter(r *http.Request) (store.EventFilter, int, error) {
	q := r.URL.Query()
	var (
		fields []validate.FieldError
		f      = store.EventFilter{Subject: q.Get("subject"), DefinitionID: q.Get("definition"), Kind: q.Get("kind"), Severity: q.Get("severity")}
		limit  = defaultEventPage
	)
	bad := func(field, format string, args ...any) {
		fields = append(fields, validate.FieldError{Field: field, Message: field + ": " + fmt.Sprintf(format, args...)})
	}
	if f.Subject != "" {
		typ, name, ok := strings.Cut(f.Subject, ":")
		switch {
		case !ok || name == "" || !slices.Contains(eventSubjectTypes, typ):
			bad("subject", "must be <type>:<name> with type %s (got %q)", strings.Join(eventSubjectTypes, ", "), f.Subject)
		case typ == ratelimit.SubjectClient:
			f.Subject = "agent:" + name // a client's events are its agent caller's
		}
	}
	if f.DefinitionID != "" {
		if _, _, _, _, err := ratelimit.ParseDefinitionID(f.DefinitionID); err != nil {
			bad("definition", "must be a definition id <axis>:<entity_type>:<name>:<window_seconds> (got %q)", f.DefinitionID)
		}
	}
	if f.Kind != "" {
		if _, ok := ratelimit.EventSeverity(f.Kind); !ok {
			bad("kind", "must be one of %s (got %q)", strings.Join(ratelimit.EventKinds(), ", "), f.Kind)
		}
	}
	if f.Severity != "" && !slices.Contains(ratelimit.EventSeverities(), f.Severity) {
		bad("severity", "must be one of %s (got %q)", strings.Join(ratelimit.EventSeverities(), ", "), f.Severity)
	}
	for name, dst := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				bad(name, "must be an RFC 3339 time such as 2026-01-02T15:04:05Z (got %q)", v)
				continue
			}
			*dst = t
		}
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		bad("until", "must be after since (got since %s, until %s)", q.Get("since"), q.Get("until"))
	}
	for name, dst := range map[string]*int64{"cursor": &f.Before, "after": &f.After} {
		if v := q.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				bad(name, "must be an event id, a whole number >= 0 (got %q)", v)
				continue
			}
			*dst = n
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			bad("limit", "must be between 1 and 10000 (got %q)", v)
		} else {
			limit = n
		}
	}
	if len(fields) > 0 {
		slices.SortFunc(fields, func(a, b validate.FieldError) int { return strings.Compare(a.Field, b.Field) })
		msgs := make([]string, len(fields))
		for i, fe := range fields {
			msgs[i] = fe.Message
		}
		return f, 0, badRequest(strings.Join(msgs, "; "), fields...)
	}
	f.Limit = limit + 1
	return f, limit, nil
}

// handleListEvents serves the record of violations, newest first, paged
// like the audit log (cursor), or oldest first after an id (after: for
// following).
func (s *Server) handleListEvents() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, limit, err := eventFilter(r)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		evs, err := s.store.ListEvents(r.Context(), f)
		if err != nil {
			s.writeProblem(w, r, err)
			return
		}
		page := wire.EventPage{Events: evs}
		if len(evs) > limit {
			page.Events = evs[:limit]
			if f.After == 0 {
				page.NextCursor = strconv.FormatInt(evs[limit-1].ID, 10)
			}
		}
		if page.Events == nil {
			page.Events = []ratelimit.Event{}
		}
		listWriteDeadline(w)
		encode(w, http.StatusOK, page)
	})
}

// Retention sweeping: every eventsSweepInterval, batches of
// eventsSweepBatch rows past the retention are deleted until a batch
// comes back short (at most eventsSweepRounds per round). Each round runs
// under an advisory lock (store.WithSweepLock): of the replicas sharing
// the database one sweeps at a time, the others skip the round. The same
// loop sweeps expired lockouts (sweepLockouts).
const (
	eventsSweepInterval = time.Minute
	eventsSweepBatch    = 5000
	eventsSweepRounds   = 20
)

// Expired escalation lockouts that hold nothing else (an anonymous
// caller's network lockout, a caller without groups) are deleted
// lockoutsKeep after they ended, lockoutsSweepBatch per transaction, at
// most lockoutsSweepRounds transactions per round: until then `quarantine
// list` shows them expired.
const (
	lockoutsKeep        = 24 * time.Hour
	lockoutsSweepBatch  = 500
	lockoutsSweepRounds = 20
)

// sweepEventsLoop deletes events older than the retention, and expired
// lockouts, until ctx ends.
func (s *Server) sweepEventsLoop(ctx context.Context) {
	t := time.NewTicker(eventsSweepInterval)
	defer t.Stop()
	for {
		if s.cfg.EventsRetention >= 0 {
			s.sweepEvents(ctx)
		}
		s.sweepLockouts(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepResult is what one sweep round did: whether this replica held the
// round's lock, and how many rows it deleted.
type sweepResult struct {
	Ran     bool
	Removed int64
}

// sweepEvents runs one round of the retention sweep, unless another
// replica is running one.
func (s *Server) sweepEvents(ctx context.Context) sweepResult {
	cutoff := s.now().Add(-s.cfg.EventsRetention)
	var removed int64
	ran, err := s.store.WithSweepLock(ctx, store.EventsSweepLock, func(ctx context.Context) error {
		s.sweepLocked(ctx, store.EventsSweepLock)
		for range eventsSweepRounds {
			sctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			n, err := s.store.SweepEvents(sctx, cutoff, eventsSweepBatch)
			cancel()
			removed += n
			if err != nil {
				return err
			}
			if n < eventsSweepBatch {
				break
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sweeping the record of violations failed", "err", err)
	}
	if removed > 0 {
		s.log.Info("swept the record of violations", "removed", removed, "older_than", cutoff.UTC().Format(time.RFC3339))
	}
	return sweepResult{Ran: ran, Removed: removed}
}

// sweepLockouts runs one round of the expired-lockout sweep, unless
// another replica is running one.
func (s *Server) sweepLockouts(ctx context.Context) sweepResult {
	before := s.now().Add(-lockoutsKeep)
	var removed int64
	ran, err := s.store.WithSweepLock(ctx, store.LockoutsSweepLock, func(ctx context.Context) error {
		s.sweepLocked(ctx, store.LockoutsSweepLock)
		for range lockoutsSweepRounds {
			sctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
			n, err := s.store.SweepExpiredLockouts(sctx, before, lockoutsSweepBatch)
			cancel()
			removed += n
			if err != nil {
				return err
			}
			if n < lockoutsSweepBatch {
				break
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		s.log.Warn("sweeping expired lockouts failed", "err", err)
	}
	if removed > 0 {
		s.log.Info("swept expired lockouts", "removed", removed, "ended_before", before.UTC().Format(time.RFC3339))
	}
	return sweepResult{Ran: ran, Removed: removed}
}

// sweepLocked calls the test hook, if any, as a round starts under its
// lock.
func (s *Server) sweepLocked(ctx context.Context, lock string) {
	if h := s.sweepHook.Load(); h != nil {
		(*h)(ctx, lock)
	}
}
