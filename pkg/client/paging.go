package client

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
)

// allPageSize is the page size ListAll* use when the filter sets none:
// large enough to need few round trips, small enough that one page never
// strains the server.
const allPageSize = 1000

// listAll follows next_cursor from cursor until the server has no more.
func listAll[T any](ctx context.Context, limit int, cursor string, page func(ctx context.Context, limit int, cursor string) ([]T, string, error)) ([]T, error) {
	if limit == 0 {
		limit = allPageSize
	}
	var all []T
	for {
		items, next, err := page(ctx, limit, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if next == "" {
			return all, nil
		}
		if next == cursor {
			// A server bug would otherwise loop forever.
			return nil, fmt.Errorf("server returned cursor %q twice", next)
		}
		cursor = next
	}
}

// setNonEmpty adds a query parameter only when it has a value, since the
// server treats a present but empty filter as "match the empty string".
func setNonEmpty(q url.Values, key, value string) {
	if value != "" {
		q.Set(key, value)
	}
}

// setPaging adds limit and cursor.
func setPaging(q url.Values, limit int, cursor string) {
	if limit != 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	setNonEmpty(q, "cursor", cursor)
}
