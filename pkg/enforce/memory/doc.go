// Package memory is an in-memory enforce.CounterStore: exact within one
// process, for tests and for a single gateway process that needs no
// database (examples/filegateway). Counters held here are not shared with
// other processes and do not survive a restart.
//
// Each call is decided all or nothing under the locks of the shards its
// gates live in (64 shards by a hash of the key, locked in shard order),
// so concurrent calls are exact and never deadlock. Every algorithm is
// counted, with pkg/enforce/algorithm's arithmetic, from TakeRequest.Now:
// fixed and sliding windows as a count per window aligned on the Unix
// epoch (a sliding window reads its previous window too), token buckets as
// one theoretical arrival time per key. Gates of different algorithms mix
// in one call, all or nothing.
//
// Memory is bounded: Sweep removes ended windows (a sliding window once
// the window after it has ended too) and full token buckets; a key's
// window that can no longer count is dropped when its next one opens; and
// a shard that has doubled since its last sweep sweeps itself by the
// latest time it has seen, so a gateway that never calls Sweep still holds
// at most about twice its live counters. A hard cap stands besides
// (Options.MaxKeys, DefaultMaxKeys): a flood of distinct keys within one
// window evicts, the ended counters first and then the least recently
// used, and never makes the store deny (Evicted counts it). The store passes
// enforcetest.TestCounterStore for every algorithm.
package memory
