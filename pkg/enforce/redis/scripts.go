package redis

// The Lua scripts. Redis runs Lua 5.1, whose numbers are doubles: every
// quantity here stays below 2^53, or is split so that it does. Times are
// (seconds, nanoseconds) pairs; the sliding window's products are split
// into 15-bit halves. The client computes everything it can (window
// indexes, offsets, the token bucket's emission interval and depth) with
// pkg/enforce/algorithm and passes it in; the scripts read the counters,
// decide with the same integer arithmetic, and write.
//
// Both start with a "#!lua" line (Redis 7.0 and later): a script so marked
// may write, so Redis refuses it before it runs, never half way, when
// memory is full (OOM) or the node is a replica, and it may touch only the
// keys it declares (on a cluster, all in one slot).

// takeScript decides a sequence of calls' gates that all live in one hash
// slot (or, on a standalone server, every gate of a batch), in order.
//
// ARGV[1] is the batch's deadline on the server's clock, in microseconds
// since the epoch (0: none; see Store.serverDeadline): a script that
// starts after it (it waited behind a stalled server, say) answers an
// error beginning "DEADLINE" and changes nothing, so a decision whose
// caller gave up on it never consumes when the server gets to it late.
// ARGV[2] is the number of calls; then, per call: consume (0/1, or 2: see
// below), cost, the number of gates, and 12 fields per gate (N in the script):
//
//	algo ('f', 's', 't'), enforce (0/1), key index, previous window's key index (s),
//	limit, a, b, c, d, e, f, g
//
//	f: a = the key's TTL in ms
//	s: a = TTL in ms, b = the window in ms, c = the offset e in ms
//	t: a = now's seconds, b = now's nanoseconds, c = 1 when the cost can
//	   never fit (above the burst), d, e = tau - cost*T as a pair,
//	   f, g = cost*T as a pair; the previous-key field carries the slack
//	   (ms) added to the TTL, which is the new TAT's distance from now
//
// The reply, per call: took (0/1), then per gate: room (0/1), the state
// before (two integers) and after (two integers): a window's count and
// the previous window's count, a bucket's TAT as seconds and nanoseconds
// (nanoseconds -1: none, a full bucket).
//
// A call takes only when every enforce gate here has room and it
// consumes; it then takes from every gate with room (a full shadow gate
// reports and takes nothing).
//
// consume 2 is the common case's short form: a call that consumes, whose
// gates here are all fixed windows on distinct keys, sends 4 fields per
// gate (enforce, key index, limit, TTL in ms) and is decided with one
// INCRBY per gate (PEXPIRE only on a new key) instead of GET, INCRBY and
// PEXPIRE; what may not stay is given back (DECRBY, or DEL of a key the
// call created) inside the same script, so the answer and the counts are
// those of the long form.
const takeScript = `#!lua
local E9 = 1000000000
local H = 32768
local function mul(a, b)
  local ah = math.floor(a / H)
  local al = a - ah * H
  local hi, lo = ah * b, al * b
  local c = math.floor(lo / H)
  return hi + c, lo - c * H
end
local function le(ah, al, bh, bl)
  return ah < bh or (ah == bh and al <= bl)
end
local function sub(as, an, bs, bn)
  local s, n = as - bs, an - bn
  if n < 0 then n = n + E9; s = s - 1 end
  return s, n
end
local function add(as, an, bs, bn)
  local s, n = as + bs, an + bn
  if n >= E9 then n = n - E9; s = s + 1 end
  return s, n
end
local function tat(v)
  if not v then return nil end
  local s, n = string.match(v, '^(-?%d+):(%d+)$')
  return tonumber(s), tonumber(n)
end
local function slroom(prev, cur, cost, limit, wms, e)
  local free = limit - cur - cost
  if cost < 1 or cost > limit or wms <= 0 or free < 0 then return false end
  if prev == 0 then return true end
  local lh, ll = mul(prev, wms - e)
  local rh, rl = mul(free, wms)
  return le(lh, ll, rh, rl)
end
local dl = tonumber(ARGV[1])
if dl > 0 then
  local t = redis.call('TIME')
  if tonumber(t[1]) * 1000000 + tonumber(t[2]) > dl then
    return redis.error_reply('DEADLINE the batch reached Redis after its deadline: nothing taken')
  end
end
local N = 12
local out = {}
local p = 3
for _ = 1, tonumber(ARGV[2]) do
  local cost = tonumber(ARGV[p + 1])
  local ng = tonumber(ARGV[p + 2])
  local base = p + 3
  if ARGV[p] == '2' then
    -- Consumes, fixed windows only, distinct keys: 4 fields per gate
    -- (enforce, key index, limit, TTL in ms). Increment first (a new key
    -- gets its TTL), then give back what may not stay: every gate if an
    -- enforce gate is past its limit, else the shadow gates past theirs.
    -- One script, so no other call sees the increments given back.
    local after, room = {}, {}
    local ok = true
    for g = 1, ng do
      local q = base + (g - 1) * 4
      local key = KEYS[tonumber(ARGV[q + 1])]
      local a = redis.call('INCRBY', key, cost)
      if a == cost then redis.call('PEXPIRE', key, ARGV[q + 3]) end
      local r = a <= tonumber(ARGV[q + 2])
      after[g], room[g] = a, r
      if ARGV[q] == '1' and not r then ok = false end
    end
    out[#out + 1] = ok and 1 or 0
    for g = 1, ng do
      local a, before = after[g], after[g] - cost
      if not (ok and room[g]) then
        local key = KEYS[tonumber(ARGV[base + (g - 1) * 4 + 1])]
        if before == 0 then redis.call('DEL', key) else redis.call('DECRBY', key, cost) end
        a = before
      end
      out[#out + 1] = room[g] and 1 or 0
      out[#out + 1] = before
      out[#out + 1] = 0
      out[#out + 1] = a
      out[#out + 1] = 0
    end
    p = base + ng * 4
  else
    local take = ARGV[p] == '1'
    local ok = true
    local room, pa, pb = {}, {}, {}
    for g = 1, ng do
      local q = base + (g - 1) * N
      local algo, enf, key = ARGV[q], ARGV[q + 1] == '1', KEYS[tonumber(ARGV[q + 2])]
      local limit = tonumber(ARGV[q + 4])
      local r, a, b
      if algo == 'f' then
        a, b = tonumber(redis.call('GET', key) or '0'), 0
        r = cost >= 1 and cost <= limit - a
      elseif algo == 's' then
        a = tonumber(redis.call('GET', key) or '0')
        b = tonumber(redis.call('GET', KEYS[tonumber(ARGV[q + 3])]) or '0')
        r = slroom(b, a, cost, limit, tonumber(ARGV[q + 6]), tonumber(ARGV[q + 7]))
      else
        local ns, nn = tonumber(ARGV[q + 5]), tonumber(ARGV[q + 6])
        local ts, tn = tat(redis.call('GET', key))
        local ds, dn = 0, 0
        a, b = 0, -1
        if ts and (ts > ns or (ts == ns and tn > nn)) then
          a, b = ts, tn
          ds, dn = sub(ts, tn, ns, nn)
        end
        r = ARGV[q + 7] == '0' and le(ds, dn, tonumber(ARGV[q + 8]), tonumber(ARGV[q + 9]))
      end
      room[g], pa[g], pb[g] = r, a, b
      if enf and not r then ok = false end
    end
    local took = take and ok
    out[#out + 1] = took and 1 or 0
    for g = 1, ng do
      local q = base + (g - 1) * N
      local algo, key = ARGV[q], KEYS[tonumber(ARGV[q + 2])]
      local a, b = pa[g], pb[g]
      if took and room[g] then
        if algo == 'f' or algo == 's' then
          a = redis.call('INCRBY', key, cost)
          redis.call('PEXPIRE', key, ARGV[q + 5])
        else
          local ns, nn = tonumber(ARGV[q + 5]), tonumber(ARGV[q + 6])
          local ts, tn = tat(redis.call('GET', key))
          if not ts or ts < ns or (ts == ns and tn < nn) then ts, tn = ns, nn end
          a, b = add(ts, tn, tonumber(ARGV[q + 10]), tonumber(ARGV[q + 11]))
          local ds, dn = sub(a, b, ns, nn)
          local ttl = ds * 1000 + math.floor((dn + 999999) / 1000000) + tonumber(ARGV[q + 3])
          redis.call('SET', key, string.format('%d:%d', a, b), 'PX', string.format('%d', ttl))
        end
      end
      out[#out + 1] = room[g] and 1 or 0
      out[#out + 1] = pa[g]
      out[#out + 1] = pb[g]
      out[#out + 1] = a
      out[#out + 1] = b
    end
    p = base + ng * N
  end
end
return out
`

// giveBackScript undoes what takeScript took for calls denied by a gate
// in another slot. ARGV[1] is the number of gates; then per gate: algo,
// key index, cost, the TAT the take stored ('t'), the TAT it replaced ('t':
// "" for none) and that TAT's TTL in ms (0: none left, delete).
//
// A window's count goes down by the cost (never below zero: a counter
// restarted empty in between is not driven negative). A bucket's TAT is
// restored only if it is still the one the take stored: if another call
// took since, the TAT it stored counted this call's tokens and cannot be
// unwound exactly, so they stay taken and drip back at the bucket's rate
// (the call errs toward refusing, never admitting).
const giveBackScript = `#!lua
local p = 2
local undone = 0
for _ = 1, tonumber(ARGV[1]) do
  local algo, key, cost = ARGV[p], KEYS[tonumber(ARGV[p + 1])], tonumber(ARGV[p + 2])
  if algo == 'f' or algo == 's' then
    local v = tonumber(redis.call('GET', key) or '0')
    local d = math.min(v, cost)
    if d > 0 then redis.call('DECRBY', key, d) end
    undone = undone + 1
  else
    if redis.call('GET', key) == ARGV[p + 3] then
      if ARGV[p + 4] ~= '' and tonumber(ARGV[p + 5]) > 0 then
        redis.call('SET', key, ARGV[p + 4], 'PX', ARGV[p + 5])
      else
        redis.call('DEL', key)
      end
      undone = undone + 1
    end
  end
  p = p + 6
end
return undone
`
