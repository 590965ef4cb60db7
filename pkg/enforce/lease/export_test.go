package lease

import "time"

// Reap runs one pass of the Store's reaper at now, as its background loop
// does.
func (l *Store) Reap(now time.Time) { l.reap(now) }
