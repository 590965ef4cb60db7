package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rlctl/rlctl/pkg/client"
)

// FollowPage is the most rows one poll of Follow asks for; a full page
// means more may wait, so Follow asks again at once.
const FollowPage = 1000

// Follow polls a log the server pages by id (the audit log, the record of
// violations) until ctx ends: every interval it fetches the rows after the
// last one it has written (after 0: the server answers newest first, so
// that page is reversed) and writes them oldest first. A poll that fails
// on the server's or the network's side is reported on errOut as what
// failed and retried at the next tick; any other error ends it. The end of
// ctx is a normal end, not an error.
func Follow[T any](ctx context.Context, errOut io.Writer, what string, interval time.Duration, lastID int64,
	fetch func(ctx context.Context, after int64, limit int) ([]T, error), id func(T) int64, write func([]T) error) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		for {
			rows, err := fetch(ctx, lastID, FollowPage)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if !Transient(err) {
					return err
				}
				fmt.Fprintf(errOut, "%s: %v (retrying)\n", what, err)
				break
			}
			if lastID == 0 {
				slices.Reverse(rows)
			}
			if err := write(rows); err != nil {
				return err
			}
			if len(rows) > 0 {
				lastID = id(rows[len(rows)-1])
			}
			if len(rows) < FollowPage {
				break
			}
		}
	}
}

// EndOf turns an error caused by the end of ctx into a normal end.
func EndOf(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// Transient reports whether a failed poll is worth retrying: the server or
// the network failed, not the request.
func Transient(err error) bool {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode >= 500 || apiErr.StatusCode == 429
	}
	return true
}
