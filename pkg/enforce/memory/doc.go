// Package memory is an in-memory enforce.CounterStore: exact within one
// process, for tests and for a single gateway process that needs no
// database (examples/filegateway). Counters held here are not shared with
// other processes and do not survive a restart.
//
// Each call is decided all or nothing under the locks of the shards its
// gates live in (64 shards by a hash of the key, locked in shard order),
// so concurrent calls are exact and never deadlock. Counters are fixed
// windows aligned on the Unix epoch, computed from TakeRequest.Now.
//
// Memory is bounded: Sweep removes ended windows; a key's previous window
// is dropped when its next one opens; and a shard that has doubled since
// its last sweep sweeps itself by the latest time it has seen, so a
// gateway that never calls Sweep still holds at most about twice its live
// counters. The store passes enforcetest.TestCounterStore.
package memory
