package enforce

import snapshots "github.com/rlctl/rlctl/pkg/enforce/internal/snapshot"

// snapshot is what a decision reads apart from the counters
// (internal/snapshot), with the core's cache of the views calls were
// decided from (viewcache.go).
type snapshot = snapshots.Snapshot[viewCache]
