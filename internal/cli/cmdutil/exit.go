// Package cmdutil holds what every rlctl command shares: the Factory that
// builds clients, the exit codes, error classification and prompts.
package cmdutil

import (
	"errors"
	"fmt"

	"github.com/rlctl/rlctl/pkg/client"
)

// Exit codes. They are few on purpose, so scripts can branch on them;
// `rlctl help exit-codes` documents them.
const (
	ExitOK       = 0 // success
	ExitError    = 1 // any other error: network, server fault, unexpected
	ExitUsage    = 2 // bad flags or arguments, nothing sent
	ExitAuth     = 3 // no, invalid, expired or revoked token (401), or a role that may not (403)
	ExitNotFound = 4 // the object does not exist (404)
	ExitRefused  = 5 // the server refused the change: validation (400), conflict (409), stale version (412), admin quarantine (403)
	ExitChanges  = 6 // diff found changes
)

// ExitCodesHelp is the text of `rlctl help exit-codes`.
const ExitCodesHelp = `rlctl exits with one of these codes:

  0  success
  1  error: the server could not be reached, failed (5xx), or something unexpected happened
  2  usage: bad flags, arguments or files, including values rlapi's rules refuse
     (rlctl checks them with the same rules, but the floors, before it sends
     anything); nothing was sent
  3  auth: no token, or an invalid, expired or revoked one (401), or a token whose role
     may not do this (403)
  4  not found: the object does not exist (404)
  5  refused: the server refused the change: invalid (400, e.g. below a floor), conflict
     (409, e.g. deleting a quarantine sentinel), stale version (412, --if-version), or an
     attempt to quarantine an administrator (403)
  6  changes: 'rlctl diff' found differences between the files and the server; CI can
     fail on it (apply, dry run or not, exits 0 when it succeeds)

The server's message is printed to stderr as is; field errors are listed one per line.
`

// FlagError is a usage error: the command line is wrong.
type FlagError struct{ Err error }

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf builds a FlagError.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// ExitCodeError carries an exit code without a message of its own (the command
// already printed what it had to say, e.g. a diff).
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// ErrCanceled is returned when the user declines a confirmation.
var ErrCanceled = errors.New("canceled")

// ExitCode classifies an error into one of the exit codes.
func ExitCode(err error) int {
	var (
		fe *FlagError
		ee *ExitCodeError
	)
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	case errors.As(err, &fe):
		return ExitUsage
	case errors.Is(err, ErrCanceled):
		return ExitError
	case errors.Is(err, client.ErrRefused):
		// A 403 for the change itself (quarantining an administrator),
		// not for the token's role (client.ErrRoleForbidden: auth).
		return ExitRefused
	case errors.Is(err, client.ErrUnauthorized), errors.Is(err, client.ErrForbidden), errors.Is(err, client.ErrTooManyRequests):
		return ExitAuth
	case errors.Is(err, client.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, client.ErrBadRequest), errors.Is(err, client.ErrConflict), errors.Is(err, client.ErrPreconditionFailed):
		return ExitRefused
	default:
		return ExitError
	}
}
