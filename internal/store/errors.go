package store

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rlctl/rlctl/pkg/ratelimit"
)

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// ErrUnavailable is what every UnavailableError is (errors.Is): the
// database cannot answer now, and the same request may succeed later.
var ErrUnavailable = ratelimit.ErrUnavailable

// Why the database is unavailable; the API words its 503 after it.
const (
	UnavailableTimeout          = "timeout"            // no answer within the deadline
	UnavailableRefused          = "refused"            // nothing listens at its address, or it cannot be reached
	UnavailableShuttingDown     = "shutting-down"      // SQLSTATE 57P01, 57P02: it is stopping, or stopped this session
	UnavailableCannotConnectNow = "cannot-connect-now" // SQLSTATE 57P03: starting up, or shutting down, it takes no new sessions
	UnavailableOverloaded       = "overloaded"         // SQLSTATE 53300: too many connections
	UnavailableLost             = "connection-lost"
)

// UnavailableError is a failure of the database, not of the request: a
// timeout, a refused or lost connection, a server shutting down or starting
// up. It is recognized by error type and SQLSTATE, never by message text.
type UnavailableError struct {
	Reason string // one of the Unavailable* constants
	err    error
}

func (e *UnavailableError) Error() string {
	return "database unavailable (" + e.Reason + "): " + e.err.Error()
}
func (e *UnavailableError) Unwrap() error        { return e.err }
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// AsUnavailable returns err as an *UnavailableError when it means the
// database is unavailable, else nil. It takes errors straight from pgx as
// well as those the store already interpreted.
func AsUnavailable(err error) *UnavailableError {
	if err == nil {
		return nil
	}
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return ue
	}
	reason := unavailableReason(err)
	if reason == "" {
		return nil
	}
	return &UnavailableError{Reason: reason, err: err}
}

func unavailableReason(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "57P01" || pgErr.Code == "57P02": // admin_shutdown, crash_shutdown
			return UnavailableShuttingDown
		case pgErr.Code == "57P03": // cannot_connect_now
			return UnavailableCannotConnectNow
		case pgErr.Code == "53300": // too_many_connections
			return UnavailableOverloaded
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection_exception
			return UnavailableLost
		}
		return "" // any other answer of the server is about the request
	}
	if pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) {
		return UnavailableTimeout
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return UnavailableTimeout
	}
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) {
		return UnavailableRefused
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return UnavailableRefused
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return UnavailableRefused
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return UnavailableLost
	}
	return ""
}
