package enforce

import (
	"context"
	"fmt"
	"time"
)

// Interfaces a Source may implement beside Source; the Enforcer uses them
// when it finds them and does without otherwise.

// TablesRequest names what a reload reads: per table, every row (All...)
// or the rows with the ids listed.
type TablesRequest struct {
	AllDefinitions, AllMemberships, AllAdmins bool
	Definitions, Memberships, Admins          []string
}

// TableSource is a Source that can read some tables whole and others by
// id in one consistent read. Without it, a change notice that widens to a
// whole table (a statement of many rows) reloads everything through Load;
// with it only that table is read whole (pkg/enforce/postgres: a 100-row
// apply of definitions does not read 100,000 memberships).
type TableSource interface {
	LoadTables(ctx context.Context, req TablesRequest) (Rows, error)
}

// BackendNamer is a CounterStore that names its backend for the metrics:
// the backend label of rlctl_enforce_backend_duration_seconds (postgres,
// redis, redis-cluster, memory). A store without it is labelled by its Go
// type (*mypkg.Store): one value per process either way, so the label
// stays bounded, and a latency never goes unattributed. It is a name, not
// a capability: nothing behaves differently with or without it.
type BackendNamer interface {
	BackendName() string
}

// backendName is the backend label of counters.
func backendName(counters CounterStore) string {
	if n, ok := counters.(BackendNamer); ok && n.BackendName() != "" {
		return n.BackendName()
	}
	return fmt.Sprintf("%T", counters)
}

// QuarantineCounter is a Source that counts the subjects quarantined at now
// itself (pkg/enforce/postgres asks the database at scrape time, so every
// replica reports the same). Without it the gauge
// rlctl_enforce_quarantined_subjects is counted from the Enforcer's
// snapshot.
type QuarantineCounter interface {
	CountQuarantined(ctx context.Context, now time.Time) (callers, targets int64, err error)
}
