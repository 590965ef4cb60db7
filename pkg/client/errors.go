package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Sentinels classifying an *APIError by its status; test with errors.Is.
var (
	ErrBadRequest         = errors.New("bad request")         // 400, 413, 422
	ErrUnauthorized       = errors.New("unauthorized")        // 401
	ErrForbidden          = errors.New("forbidden")           // 403
	ErrNotFound           = errors.New("not found")           // 404
	ErrConflict           = errors.New("conflict")            // 409
	ErrPreconditionFailed = errors.New("precondition failed") // 412
	ErrTooManyRequests    = errors.New("too many requests")   // 429
	ErrUnavailable        = errors.New("service unavailable") // 502, 503, 504
)

// Sentinels classifying an *APIError by its problem type, mirroring the
// server's domain errors; test with errors.Is. An *APIError is also the
// status's sentinel above (ErrAdminQuarantine is an ErrForbidden too).
var (
	// ErrAdminQuarantine: administrators cannot be quarantined (403).
	ErrAdminQuarantine = errors.New("administrators cannot be quarantined")
	// ErrQuarantinedAdmin: a quarantined subject cannot be made an
	// administrator (409).
	ErrQuarantinedAdmin = errors.New("a quarantined subject cannot be made an administrator")
	// ErrAdminCheckFailed: a quarantine was not made because the server
	// could not verify that the subject is no administrator (503; it fails
	// closed). Retrying may succeed.
	ErrAdminCheckFailed = errors.New("cannot verify administrator status")
	// ErrRefused: the server refused this request on one of its rules (a
	// 403 with a problem type other than "forbidden": quarantining an
	// administrator, a quarantined or throttled call), as opposed to the
	// token's role being too weak (ErrRoleForbidden). Both are
	// ErrForbidden.
	ErrRefused = errors.New("refused")
	// ErrRoleForbidden: the token's role may not do this (a 403 of type
	// "forbidden", or one without a problem type).
	ErrRoleForbidden = errors.New("forbidden for this token's role")
)

// ProblemTypeBase prefixes the problem types the server sends.
const ProblemTypeBase = "https://rlctl.dev/problems/"

// problemTypes maps a problem type (the part after ProblemTypeBase) and
// status to its sentinel: the one place the SDK reads problem types.
var problemTypes = []struct {
	kind   string
	status int // 0: any status
	err    error
}{
	{"admin-quarantine", http.StatusForbidden, ErrAdminQuarantine},
	{"quarantined", http.StatusConflict, ErrQuarantinedAdmin},
	{"admin-check-failed", http.StatusServiceUnavailable, ErrAdminCheckFailed},
}

// Is reports whether target is the sentinel of e's problem type (the
// table above), or, for a 403, ErrRoleForbidden (type "forbidden" or none)
// or ErrRefused (any other type); errors.Is asks it. The status's sentinel
// comes from Unwrap.
func (e *APIError) Is(target error) bool {
	if kind, ok := strings.CutPrefix(e.Type, ProblemTypeBase); ok {
		for _, p := range problemTypes {
			if p.kind == kind && (p.status == 0 || p.status == e.StatusCode) && p.err == target {
				return true
			}
		}
	}
	if e.StatusCode != http.StatusForbidden {
		return false
	}
	roleRefusal := e.Type == "" || e.Type == ProblemTypeBase+"forbidden"
	switch target {
	case ErrRefused:
		return !roleRefusal
	case ErrRoleForbidden:
		return roleRefusal
	}
	return false
}

// FieldError is one problem with one field of a request, as listed in a
// problem's "errors".
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// APIError is a non-2xx answer from the server, decoded from its RFC 9457
// problem details when it sent some.
type APIError struct {
	StatusCode int
	Type       string
	Title      string
	// Detail is the server's complete message; Error returns it as is.
	Detail string
	// Errors lists each field at fault for validation failures.
	Errors []FieldError
	// RequestID is the response's X-Request-ID, to quote when reporting.
	RequestID string
	// RetryAfter is the wait the server asked for (429, 503), or zero.
	RetryAfter time.Duration

	// snippet is the start of a body that was not problem details, so
	// that Error still says something useful about a proxy's HTML page.
	snippet string
}

// Error returns the server's detail unchanged: it is written for people and
// already names what is wrong. Without one it falls back to the status and
// the start of the body.
func (e *APIError) Error() string {
	if e.Detail != "" {
		return e.Detail
	}
	msg := strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
	if e.Title != "" && e.Title != http.StatusText(e.StatusCode) {
		msg += ": " + e.Title
	}
	if e.snippet != "" {
		msg += ": " + e.snippet
	}
	return msg
}

// Unwrap returns the sentinel for the status, so errors.Is(err, ErrNotFound)
// works; nil for statuses without one.
func (e *APIError) Unwrap() error {
	switch e.StatusCode {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		return ErrBadRequest
	case http.StatusUnauthorized:
		return ErrUnauthorized
	case http.StatusForbidden:
		return ErrForbidden
	case http.StatusNotFound:
		return ErrNotFound
	case http.StatusConflict:
		return ErrConflict
	case http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case http.StatusTooManyRequests:
		return ErrTooManyRequests
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return ErrUnavailable
	}
	return nil
}

// problem is the wire form of RFC 9457 problem details. Detail is raw
// because servers in the wild (FastAPI, which the reference API runs on) put
// a list there for validation errors.
type problem struct {
	Type   string          `json:"type"`
	Title  string          `json:"title"`
	Detail json.RawMessage `json:"detail"`
	Errors []FieldError    `json:"errors"`
}

// snippetBytes is how much of a non-problem body an error message quotes.
const snippetBytes = 200

// newAPIError decodes an error response. It accepts problem details under
// any JSON content type, since proxies and older servers label them
// application/json, and falls back to quoting the body.
func newAPIError(status int, h http.Header, body []byte, now func() time.Time) *APIError {
	e := &APIError{
		StatusCode: status,
		RequestID:  h.Get("X-Request-ID"),
		RetryAfter: parseRetryAfter(h.Get("Retry-After"), now),
	}
	var p problem
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "{") && json.Unmarshal(body, &p) == nil {
		e.Type, e.Title, e.Errors = p.Type, p.Title, p.Errors
		var detail string
		if json.Unmarshal(p.Detail, &detail) == nil {
			e.Detail = detail
		}
		if e.Detail == "" && len(e.Errors) > 0 {
			msgs := make([]string, len(e.Errors))
			for i, fe := range e.Errors {
				msgs[i] = fe.Message
			}
			e.Detail = strings.Join(msgs, "; ")
		}
		if e.Detail != "" || e.Title != "" {
			return e
		}
	}
	e.snippet = snippet(trimmed)
	return e
}

// snippet shortens a body to one line of at most snippetBytes.
func snippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= snippetBytes {
		return s
	}
	cut := snippetBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now func() time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(time.Hour/time.Second) {
			secs = int64(time.Hour / time.Second) // guard the Duration against overflow
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now()); d > 0 {
			return d
		}
	}
	return 0
}

// wrap gives a failure the operation's context, except API errors: their
// message is the server's and already says what failed.
func wrap(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) && err == error(apiErr) {
		return err
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
