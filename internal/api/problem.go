package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/rlctl/rlctl/internal/store"
	"github.com/rlctl/rlctl/internal/validate"
	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/ratelimit"
)

// Problem is an RFC 9457 problem document. Detail always carries the whole
// message: the reference's clients print detail.
type Problem struct {
	Type     string                `json:"type"`
	Title    string                `json:"title"`
	Status   int                   `json:"status"`
	Detail   string                `json:"detail"`
	Instance string                `json:"instance,omitempty"`
	Errors   []validate.FieldError `json:"errors,omitempty"`
	// ErrorsOmitted counts the problems beyond those errors lists, when
	// there were too many to list (an apply lists the first 100).
	ErrorsOmitted int `json:"errors_omitted,omitempty"`
}

const problemBase = "https://rlctl.dev/problems/"

// httpError is an error that knows its HTTP answer. Handlers return it (or
// a domain error that writeProblem maps) and never write errors themselves.
type httpError struct {
	status     int
	kind       string // the problem type's last segment
	title      string
	detail     string
	fields     []validate.FieldError
	omitted    int // problems beyond fields, counted only
	retryAfter time.Duration
}

func (e *httpError) Error() string { return e.detail }

func errorf(status int, kind, title, detail string) *httpError {
	return &httpError{status: status, kind: kind, title: title, detail: detail}
}

func badRequest(detail string, fields ...validate.FieldError) *httpError {
	return &httpError{status: http.StatusBadRequest, kind: "bad-request", title: "Bad request", detail: detail, fields: fields}
}

func notFound(what, id string) *httpError {
	return errorf(http.StatusNotFound, "not-found", "Not found", what+" '"+id+"' not found")
}

// adminCheckFailed is the 503 of a quarantine that could not be checked
// against the administrators (quarantine fails closed); outcome says what
// was left undone ("it was not quarantined", "nothing was applied").
func adminCheckFailed(subject, outcome string) *httpError {
	return errorf(http.StatusServiceUnavailable, "admin-check-failed", "Cannot verify administrator status",
		fmt.Sprintf("cannot verify whether '%s' is an administrator, so %s (quarantine fails closed); retry shortly", subject, outcome))
}

// writeProblem maps err to its status and writes it as problem+json. Errors
// it does not know are logged at ERROR with the request id and answered 500
// without any detail of the cause; so is a database that cannot answer
// (503). A 5xx a handler chose (an *httpError: a token that cannot be
// verified now, no Enforcer) is a documented answer, logged at WARN; a 501
// (counters-elsewhere: a configuration, not a failure) and a shed decision
// (overloaded: counted by the Enforcer) are left to the access log.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := s.problemFor(r, err)
	if level, ok := problemLevel(p.Status, err); ok {
		s.log.Log(r.Context(), level, "request failed", "request_id", requestID(r.Context()), "method", r.Method,
			"path", r.URL.Path, "status", p.Status, "err", err)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// problemLevel is the level writeProblem logs a problem of status for err
// at; false for no line.
func problemLevel(status int, err error) (slog.Level, bool) {
	var he *httpError
	switch {
	case status < 500, status == http.StatusNotImplemented:
		return 0, false
	case errors.As(err, &he) && he.kind == "overloaded":
		// A shed decision: counted (rlctl_enforce_checks_total), never a
		// line per call, which under overload would be a log storm.
		return 0, false
	case errors.As(err, &he):
		return slog.LevelWarn, true
	}
	return slog.LevelError, true
}

func (s *Server) problemFor(r *http.Request, err error) Problem {
	var (
		he *httpError
		ve *validate.Error
		se *ratelimit.SubjectError
		ce *enforce.CallError
	)
	switch {
	case errors.As(err, &he):
		if he.retryAfter > 0 {
			// The header must be set before WriteHeader; writeProblem's
			// caller has not written yet.
			setRetryAfter(r, he.retryAfter)
		}
		return Problem{Type: problemBase + he.kind, Title: he.title, Status: he.status, Detail: he.detail, Errors: he.fields,
			ErrorsOmitted: he.omitted}
	case errors.As(err, &se) && errors.Is(se.Err, ratelimit.ErrAdminQuarantine):
		detail := fmt.Sprintf("Refusing to quarantine '%s': it has administrator privileges. Administrators cannot be quarantined; revoke the grant first (DELETE /api/rate-limit-admins/%s) if this is intended.",
			se.Subject, ratelimit.MembershipID(se.SubjectType, se.Subject))
		if se.More > 0 {
			detail += fmt.Sprintf(" %d more memberships in this apply quarantine administrators too.", se.More)
		}
		return Problem{Type: problemBase + "admin-quarantine", Title: "Refusing to quarantine an administrator",
			Status: http.StatusForbidden, Detail: detail}
	case errors.As(err, &se) && errors.Is(se.Err, ratelimit.ErrQuarantinedAdmin):
		id := ratelimit.MembershipID(se.SubjectType, se.Subject)
		return Problem{Type: problemBase + "quarantined", Title: "Subject is quarantined", Status: http.StatusConflict,
			Detail: fmt.Sprintf("'%s' is quarantined; remove the quarantine (DELETE /api/rate-limit-quarantine/%s) before making it an administrator", se.Subject, id)}
	case errors.As(err, &ce):
		// A decision request that enforce.Call.Normalize refused.
		fields := make([]validate.FieldError, len(ce.Fields))
		for i, f := range ce.Fields {
			fields[i] = validate.FieldError{Field: f.Field, Message: f.Message}
		}
		return Problem{Type: problemBase + "bad-request", Title: "Bad request", Status: http.StatusBadRequest,
			Detail: ce.Error(), Errors: fields}
	case errors.As(err, &ve):
		return Problem{Type: problemBase + "validation", Title: "Invalid request", Status: http.StatusBadRequest,
			Detail: ve.Error(), Errors: ve.Errors}
	case errors.Is(err, store.ErrNotFound):
		return Problem{Type: problemBase + "not-found", Title: "Not found", Status: http.StatusNotFound, Detail: err.Error()}
	case errors.Is(err, store.ErrPreconditionFailed):
		return Problem{Type: problemBase + "precondition-failed", Title: "Precondition failed",
			Status: http.StatusPreconditionFailed, Detail: err.Error()}
	case errors.Is(err, store.ErrConflict):
		return Problem{Type: problemBase + "conflict", Title: "Conflict", Status: http.StatusConflict, Detail: err.Error()}
	case errors.Is(err, store.ErrInvalid):
		// A rule validate should have caught; the database refused it.
		return Problem{Type: problemBase + "validation", Title: "Invalid request", Status: http.StatusBadRequest, Detail: err.Error()}
	case errors.Is(err, context.DeadlineExceeded), store.AsUnavailable(err) != nil:
		setRetryAfter(r, unavailableRetryAfter)
		return Problem{Type: problemBase + "unavailable", Title: "Service unavailable", Status: http.StatusServiceUnavailable,
			Detail: unavailableDetail(err)}
	case errors.Is(err, context.Canceled):
		// The client went away; the status is for the log only.
		return Problem{Type: problemBase + "canceled", Title: "Client closed request", Status: 499, Detail: "request canceled"}
	default:
		return Problem{Type: problemBase + "internal", Title: "Internal server error", Status: http.StatusInternalServerError,
			Detail: "internal error (request id " + requestID(r.Context()) + ")"}
	}
}

// setRetryAfter makes the answer, when its header is written, carry
// Retry-After.
func setRetryAfter(r *http.Request, d time.Duration) {
	if st := stateOf(r.Context()); st != nil {
		st.retryAfter = d
	}
}

func writeRetryAfter(w http.ResponseWriter, d time.Duration) {
	secs := int((d + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.Itoa(secs))
}

func isNotFoundErr(err error) bool { return errors.Is(err, store.ErrNotFound) }

// unavailableRetryAfter is the Retry-After of a 503 for a database that
// cannot answer: about what a PostgreSQL restart or failover takes.
const unavailableRetryAfter = 5 * time.Second

// unavailableDetail words why the database could not answer, from the
// error's type and SQLSTATE (store.AsUnavailable), never its text.
func unavailableDetail(err error) string {
	reason := store.UnavailableTimeout
	if ue := store.AsUnavailable(err); ue != nil {
		reason = ue.Reason
	}
	switch reason {
	case store.UnavailableRefused:
		return "the database refused the connection or cannot be reached; retry shortly"
	case store.UnavailableShuttingDown:
		return "the database is shutting down or restarting; retry shortly"
	case store.UnavailableCannotConnectNow:
		return "the database is starting up or shutting down and takes no connections yet; retry shortly"
	case store.UnavailableOverloaded:
		return "the database has too many connections; retry shortly"
	case store.UnavailableLost:
		return "the connection to the database was lost; retry shortly"
	default:
		return "the database did not answer in time; retry shortly"
	}
}
