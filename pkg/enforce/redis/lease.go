package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/rlctl/rlctl/pkg/enforce"
	"github.com/rlctl/rlctl/pkg/enforce/algorithm"
)

// returnScript gives back the unused part of a leased block on one key.
// ARGV: algo ('f', 's', 't'), units (windows), then for a bucket the
// time to take off its TAT and now, as (seconds, nanoseconds) pairs.
//
// A window's count goes down by the units (never below zero: a counter
// restarted empty is not driven negative). A bucket's TAT moves back,
// never before now: one that would is full, and a full bucket is no key.
// The key's TTL is kept (a bucket's only lives longer than it needs).
const returnScript = `#!lua
local key = KEYS[1]
if ARGV[1] == 'f' or ARGV[1] == 's' then
  local v = tonumber(redis.call('GET', key) or '0')
  local d = math.min(v, tonumber(ARGV[2]))
  if d > 0 then redis.call('DECRBY', key, d) end
  return d
end
local v = redis.call('GET', key)
if not v then return 0 end
local s, n = string.match(v, '^(-?%d+):(%d+)$')
s, n = tonumber(s), tonumber(n)
local ns, nn = tonumber(ARGV[5]), tonumber(ARGV[6])
if not s or s < ns or (s == ns and n <= nn) then return 0 end
s, n = s - tonumber(ARGV[3]), n - tonumber(ARGV[4])
if n < 0 then n = n + 1000000000; s = s - 1 end
if s < ns or (s == ns and n <= nn) then
  redis.call('DEL', key)
  return 1
end
redis.call('SET', key, string.format('%d:%d', s, n), 'KEEPTTL')
return 1
`

var returnSc = newScript(returnScript)

// ReturnUnused gives back the unused part of leased blocks
// (enforce.CounterStore): one script per key, pipelined (each key is
// its own slot's business, so a cluster needs no two-phase step).
func (s *Store) ReturnUnused(ctx context.Context, rs []enforce.Return, deadline time.Time) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	type one struct {
		key  string
		args []string
	}
	var todo []one
	for _, r := range rs {
		if r.Units < 1 || r.Gate.KnownAlgorithm() == "" || r.Gate.Window < time.Second {
			continue
		}
		args := []string{string(code(r.Gate)), strconv.FormatInt(r.Units, 10), "0", "0", "0", "0"}
		if r.Gate.KnownAlgorithm() == enforce.AlgorithmTokenBucket {
			back := r.Units * algorithm.Interval(r.Gate.Window, r.Gate.Limit)
			bs, bn := back/1e9, back%1e9
			args[2], args[3] = strconv.FormatInt(bs, 10), strconv.FormatInt(bn, 10)
			args[4], args[5] = strconv.FormatInt(r.Now.Unix(), 10), strconv.Itoa(r.Now.Nanosecond())
		}
		todo = append(todo, one{key: s.gateKey(r.Gate, r.Taken), args: args})
	}
	if len(todo) == 0 {
		return nil
	}
	cmds := make(rueidis.Commands, len(todo))
	for i, x := range todo {
		cmds[i] = s.client.B().Evalsha().Sha1(returnSc.sha).Numkeys(1).Key(x.key).Arg(x.args...).Build()
	}
	var errs error
	for _, r := range s.exec(ctx, returnSc, cmds, func(i int) rueidis.Completed {
		return s.client.B().Eval().Script(returnSc.body).Numkeys(1).Key(todo[i].key).Arg(todo[i].args...).Build()
	}, nil) {
		if r.err != nil {
			errs = errors.Join(errs, fmt.Errorf("redis: return unused: %w", r.err))
		}
	}
	return errs
}
