package ratelimit

import (
	"errors"
	"fmt"
)

// The domain's refusals, in one place that depends on nothing: the store
// returns them (mapped from PostgreSQL's SQLSTATE and constraint names,
// never from message text), the API's problem.go maps each to its HTTP
// status and problem type once, and handlers only return them. pkg/client
// mirrors them (client.ErrAdminQuarantine, ...) from the problem type.
// Test with errors.Is.
var (
	// ErrNotFound: the object named does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the write collides with an object that exists.
	ErrConflict = errors.New("conflict")
	// ErrPreconditionFailed: the object changed since the version the
	// write named (If-Match).
	ErrPreconditionFailed = errors.New("version does not match")
	// ErrInvalid: the database refused a value (a CHECK, NOT NULL or
	// foreign key constraint, or text it cannot hold).
	ErrInvalid = errors.New("rejected by a database constraint")
	// ErrUnavailable: the database cannot answer now; the same request may
	// succeed later.
	ErrUnavailable = errors.New("database unavailable")
	// ErrAdminQuarantine: an administrator cannot be quarantined.
	ErrAdminQuarantine = errors.New("administrators cannot be quarantined")
	// ErrQuarantinedAdmin: a quarantined subject cannot be made an
	// administrator.
	ErrQuarantinedAdmin = errors.New("a quarantined subject cannot be made an administrator")
)

// SubjectError is a refusal about one subject (ErrAdminQuarantine,
// ErrQuarantinedAdmin): errors.Is matches Err, and the fields let the API
// word its answer.
type SubjectError struct {
	Err         error  // ErrAdminQuarantine or ErrQuarantinedAdmin
	SubjectType string // SubjectUser or SubjectClient
	Subject     string
	// More counts further subjects refused for the same reason by the same
	// request (an apply), beyond this one.
	More int
}

// AdminQuarantineError refuses to quarantine the administrator subject;
// more counts further administrators the same request quarantines.
func AdminQuarantineError(subjectType, subject string, more int) *SubjectError {
	return &SubjectError{Err: ErrAdminQuarantine, SubjectType: subjectType, Subject: subject, More: more}
}

// QuarantinedAdminError refuses to make the quarantined subject an
// administrator.
func QuarantinedAdminError(subjectType, subject string) *SubjectError {
	return &SubjectError{Err: ErrQuarantinedAdmin, SubjectType: subjectType, Subject: subject}
}

func (e *SubjectError) Error() string {
	msg := fmt.Sprintf("%s: %s", MembershipID(e.SubjectType, e.Subject), e.Err)
	if e.More > 0 {
		msg += fmt.Sprintf(" (and %d more)", e.More)
	}
	return msg
}

func (e *SubjectError) Unwrap() error { return e.Err }
