// Package redis is an enforce.CounterStore on Redis 7 (a standalone
// server, the master a Redis Sentinel set names, or a Redis Cluster with
// replicas) through rueidis: the counters
// of a deployment that outgrows one PostgreSQL primary. Only counters live
// here; definitions and their change notices stay in a Source
// (pkg/enforce/postgres's, or pkg/enforce/filesource's).
//
//	counters, err := redis.Open(ctx, "redis+cluster://10.0.0.5:6379,10.0.0.6:6379", redis.Options{})
//	e, err := postgres.Open(ctx, dsn, enforce.Options{Counters: counters, OnClose: counters.Close})
//
// Open's doc lists the URLs. A Sentinel URL lists the sentinels and names
// the master set, then optionally the db:
//
//	redis+sentinel://[user:password@]s1:26379,s2:26379/master-name[/db][?sentinel_username=u&sentinel_password=p]
//
// (rediss+sentinel:// over TLS). The user info is the master's, the query
// parameters the sentinels' credentials; no other parameter is accepted.
// Open asks a sentinel what it is and whether it monitors the master set
// before trusting it, and the client follows the master across failovers
// (the sentinels' +switch-master, and a check every two seconds); the
// takes the master answered but had not yet replicated when it died are
// lost with it.
//
// Every algorithm counts with pkg/enforce/algorithm's integer arithmetic,
// in Lua scripts (EVALSHA, EVAL when the server does not know them yet),
// with times from TakeRequest.Now, never Redis' clock. Keys expire on
// their own (Sweep does nothing); Reset deletes a gate's keys of the
// windows that count at its time, found from the gate's window (no scan). A batch's deadline goes with its
// scripts, on the servers' clocks as Inspect measures them: a script that
// reaches a stalled server late takes nothing, so a call the Enforcer's
// fail policy decided consumed nothing. A gate's Redis keys share its hash tag,
// so they live in one slot.
//
// A batch goes out as one script per hash slot, pipelined: one round trip
// per node. A call whose gates all share a slot (every call, on a
// standalone server) is decided all or nothing by one script. A call
// across slots is decided in two phases: each slot's script checks its
// gates and, if its enforce gates have room, takes (a reservation); the
// call is admitted only if every slot took, otherwise the others are
// given back before Take returns. No call is ever admitted past a limit;
// a reservation later given back may briefly refuse another call that
// would have fit, and one stranded by a node dying between the phases
// stays counted until its key expires, which errs toward refusing.
// docs/design/redis.md has the whole design and its
// failure cases; docs/scaling.md how to size it.
package redis
