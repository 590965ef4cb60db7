package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/rlctl/rlctl/internal/applydoc"
	"github.com/rlctl/rlctl/internal/statediff"
	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/pkg/ratelimit"
	"github.com/rlctl/rlctl/pkg/wire"
)

// change describes what a mutation did, for the audit log and dry runs.
type change struct {
	action       string // create, update, unchanged, delete, or a verb such as quarantine
	resourceType string
	id           string
	before       any // nil when the resource did not exist
	after        any // nil when the resource is gone
}

// errDryRun rolls a dry run's transaction back after it did everything.
var errDryRun = errors.New("dry run")

// mutate runs fn in one transaction with the audit row of its change, so a
// change never lands without its row nor a row without its change. On a dry
// run the transaction does all the work (validation, checks, constraints)
// and is then rolled back, so a dry run can never disagree with the real
// thing.
func (s *Server) mutate(r *http.Request, fn func(q *store.Queries) (change, error)) (change, bool, error) {
	dry, err := dryRun(r)
	if err != nil {
		return change{}, false, err
	}
	var ch change
	err = s.store.InTx(r.Context(), func(q *store.Queries) error {
		var err error
		if ch, err = fn(q); err != nil {
			return err
		}
		if ch.action != "unchanged" {
			err = q.InsertAudit(r.Context(), store.Audit{
				Actor: actorName(r.Context()), Action: ch.action, ResourceType: ch.resourceType,
				ResourceID: ch.id, Before: ch.before, After: ch.after, RequestID: requestID(r.Context()),
			})
			if err != nil {
				return err
			}
		}
		if dry {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		return ch, true, nil
	}
	return ch, false, err
}

// answer writes a mutation's outcome: its problem, its dry-run report, or,
// when it happened, whatever ok writes.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, ch change, dry bool, err error, ok func()) {
	switch {
	case err != nil:
		s.writeProblem(w, r, err)
	case dry:
		writeDryRun(w, ch)
	default:
		ok()
	}
}

func dryRun(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("dry_run")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest(fmt.Sprintf("dry_run: must be true or false (got %q)", v))
	}
	return b, nil
}

// ifMatch reads the expected version from If-Match ("3", W/"3" or 3);
// 0 means unconditional.
func ifMatch(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" {
		return 0, nil
	}
	v = strings.Trim(strings.TrimPrefix(v, "W/"), `"`)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, badRequest(fmt.Sprintf(`If-Match: must be a version such as "3" (got %q)`, r.Header.Get("If-Match")))
	}
	return n, nil
}

func setETag(w http.ResponseWriter, version int64) {
	if version > 0 {
		w.Header().Set("ETag", `"`+strconv.FormatInt(version, 10)+`"`)
	}
}

func writeDryRun(w http.ResponseWriter, ch change) {
	// A definition shows its algorithm here as in every other answer.
	for _, v := range []*any{&ch.before, &ch.after} {
		switch d := (*v).(type) {
		case ratelimit.Definition:
			*v = shown(d)
		case *ratelimit.Definition:
			if d != nil {
				*v = shown(*d)
			}
		}
	}
	// The resources are plain data, so marshalling them cannot fail short
	// of a bug: one is answered 500 rather than with a report missing a
	// side.
	before, errBefore := json.Marshal(ch.before)
	after, errAfter := json.Marshal(ch.after)
	if err := errors.Join(errBefore, errAfter); err != nil {
		http.Error(w, "encode dry-run report: "+err.Error(), http.StatusInternalServerError)
		return
	}
	encode(w, http.StatusOK, wire.DryRunReport{
		DryRun: true, Action: ch.action, ResourceType: ch.resourceType, ID: ch.id,
		Before: before, After: after, Changes: diffFields(ch.before, ch.after),
	})
}

// diffFields lists the fields whose JSON values differ, by name; empty,
// not null, when none does.
func diffFields(before, after any) []statediff.Change {
	out := statediff.JSONFields(before, after, applydoc.ServerFields()...)
	if out == nil {
		out = []statediff.Change{}
	}
	return out
}
