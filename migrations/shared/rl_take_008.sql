{{/*
rl_take as migration 008 creates it: every algorithm, one statement for the
common case. Kept here so that the migration that next replaces rl_take can
restore this version in its rollback. Never edit this file once 008 has
landed: a later version goes in a new file here.
*/}}
-- rl_take_gates is rl_take's arithmetic, written once: per gate of the
-- calls asked for (p_only: 0 for every call, d for call d), its counter's
-- value as it is (snap, null when the row is missing; no lock), a sliding
-- window's previous count, and the gate's numbers: it has room iff the
-- value is at most thr, and taking sets the value v to
-- greatest(v + inc, flo + inc) (flo: now for a token bucket, null for the
-- windows). A SQL function of one SELECT: the planner inlines it into
-- rl_take's statements.
create or replace function rl_take_gates(p_call int[], p_keys text[], p_windows bigint[], p_limits bigint[],
                                         p_enforce boolean[], p_expires timestamptz[], p_costs bigint[],
                                         p_consume boolean[], p_algorithms text[], p_window_ns bigint[],
                                         p_bursts bigint[], p_now bigint[], p_only int)
    returns table (ord int, call int, key text, win bigint, enf boolean, exp timestamptz, alg text, consume boolean,
                   now_ns bigint, tau bigint, snap bigint, prev bigint, thr bigint, inc bigint, flo bigint, fits boolean)
    language sql
    stable
as
$$
select b.ord, b.call, b.key, b.win, b.enf, b.exp, b.alg, b.consume, b.now_ns, b.tau, b.snap, b.prev,
       case when b.alg = 'token_bucket' then b.cap else b.cap - b.cost end, b.inc0,
       case when b.alg = 'token_bucket' then b.now_ns end,
       -- (count + cost as written: a cost that overflows a count is refused
       -- by PostgreSQL, that call alone, as before 008)
       case when b.alg = 'token_bucket' then coalesce(b.snap, 0) <= b.cap else coalesce(b.snap, 0) + b.cost <= b.cap end
from (
    select a.*,
           case a.alg
               when 'token_bucket' then
                   -- room iff max(TAT, now) + cost * T - now <= tau, i.e.
                   -- TAT <= now + tau - cost * T (the threshold itself)
                   case when a.cost <= a.burst then a.now_ns + a.tau - a.inc0 else -1 end
               when 'sliding_window' then
                   -- room iff prev * (W - e) + (count + cost) * W <= limit * W,
                   -- i.e. count + cost <= floor((limit * W - prev * (W - e)) / W)
                   case when a.x >= 0 then a.x / a.w_ms else -((a.w_ms - 1 - a.x) / a.w_ms) end
               else a.lim -- room iff count + cost <= limit
           end as cap
    from (
        select a.*,
               -- cost * T and tau = burst * T, saturating far beyond any clock
               case when a.t_ns is null then a.cost
                    when a.cost > 4611686018427387903 / a.t_ns then 4611686018427387903
                    else a.cost * a.t_ns end as inc0,
               case when a.t_ns is null then null
                    when a.burst > 4611686018427387903 / a.t_ns then 4611686018427387903
                    else a.burst * a.t_ns end as tau,
               -- limit * W - prev * (W - e), e = now_ms - window index * W
               case when a.alg = 'sliding_window'
                    then a.lim * a.w_ms - a.prev * (a.w_ms - (a.now_ns / 1000000 - a.win * a.w_ms)) end as x
        from (
            select g.ord::int as ord, g.call, g.key, g.win, g.lim, g.enf, g.exp, g.alg, g.burst, g.cost, g.consume, g.now_ns,
                   c.count as snap, coalesce(pv.count, 0) as prev,
                   -- T = ceil(window / limit), the token bucket's emission interval
                   case when g.alg = 'token_bucket' then greatest((g.wns + g.lim - 1) / g.lim, 1) end as t_ns,
                   g.wns / 1000000 as w_ms
            from (
                select g.ord, g.call, g.key, g.win, g.lim, g.enf, g.exp,
                       coalesce(g.alg, 'fixed_window') as alg, coalesce(g.wns, 0) as wns,
                       coalesce(nullif(g.burst, 0), g.lim) as burst,
                       p_costs[g.call] as cost, p_consume[g.call] as consume, coalesce(p_now[g.call], 0) as now_ns
                from unnest(p_call, p_keys, p_windows, p_limits, p_enforce, p_expires, p_algorithms, p_window_ns, p_bursts)
                     with ordinality as g(call, key, win, lim, enf, exp, alg, wns, burst, ord)
                where p_only = 0 or g.call = p_only
            ) g
            left join rl_counters c on c.key = g.key and c.window_index = g.win
            -- (offset 0 keeps the lookup a subquery that only a sliding
            -- window runs)
            left join lateral (select pv.count from rl_counters pv
                               where g.alg = 'sliding_window' and pv.key = g.key and pv.window_index = g.win - 1
                               offset 0) pv on true
        ) a
    ) a
) b
$$;

-- rl_take decides a batch of calls, each against all its gates, in one
-- round trip, for every algorithm. Gates arrive flattened and grouped by
-- call; the first eight arguments are 002's, so a binary that knows only
-- fixed windows still calls it as it always did:
--
--   p_call                which call (1..m) each gate belongs to
--   p_keys, p_windows     the gates' counters, sorted by (key, window) within
--                         each call; the window index is floor(now / window)
--                         for the windows and 0 for a token bucket (one row
--                         per key)
--   p_limits              each gate's limit (per window; a token bucket's
--                         sustained rate is p_limits per p_window_ns)
--   p_enforce             false for shadow gates: they count and report, never deny
--   p_expires             when a window's row may be removed (a token
--                         bucket's row expires once the bucket is full)
--   p_costs, p_consume    per call: what it consumes on every gate, and
--                         whether to consume at all (false for a peek)
--   p_algorithms          per gate: 'fixed_window' (null, or the argument
--                         left out, means it), 'sliding_window', 'token_bucket'
--   p_window_ns           per gate: the window's length in nanoseconds
--                         (needed by the sliding window and the token bucket)
--   p_bursts              per gate: a token bucket's capacity (>= 1)
--   p_now                 per call: its time, nanoseconds since the epoch
--
-- It returns, per call, whether it is allowed, and per gate its state after
-- the batch, whether it had room for its call (a shadow gate without room
-- "would deny"), and for a sliding window the previous window's count:
--
--   fixed_window          counts: the window's count
--   sliding_window        counts: the window's count; previous: window - 1's
--   token_bucket          counts: the theoretical arrival time (TAT, ns;
--                         0 or not after now: the bucket is full)
--
-- The arithmetic, integers only (pkg/enforce/algorithm has the same):
--   fixed_window    room iff count + cost <= limit
--   sliding_window  W = window ms, e = now_ms - window index * W:
--                   room iff prev * (W - e) + (count + cost) * W <= limit * W
--   token_bucket    T = ceil(window_ns / limit), tau = burst * T:
--                   room iff max(TAT, now) + cost * T - now <= tau;
--                   taking stores TAT = max(TAT, now) + cost * T
-- Each is written as "the value before the call is at most a threshold"
-- (thr) and "taking sets the value v to greatest(v + inc, flo + inc)"
-- (flo: now for a token bucket, none for the windows): rl_take_gates
-- computes the numbers, and the decisions below are the same for every
-- algorithm.
--
-- 1. Read every gate without locks (phase 1). Values only move towards
--    "no room" while a call waits (counts grow, a TAT only moves later; a
--    reset, which gives room, is the exception), so a gate found without
--    room stays so: a call denied here takes no lock and writes nothing.
-- 2. If a counter the calls would take is missing, insert it (count 0; a
--    token bucket's TAT 0, a full bucket) and start again. Nothing is
--    locked before that insert, so it never waits holding a lock another
--    decision waits for.
-- 3. One call: lock the counters it would take, in (key, window) order (so
--    concurrent decisions never deadlock), check them, and write them in the
--    same statement, or write nothing.
-- 4. A batch: lock the union of the counters its calls would take, once, in
--    key order, decide the calls one after another on the locked values
--    (each sees those before), and write each counter once. A sliding
--    window whose previous window the batch itself writes (calls on both
--    sides of a boundary) read it too early: such a batch locks the
--    counters of its consuming calls in key order, then decides its calls
--    one at a time with the one-call statement, each seeing those before.
--
-- Shadow gates count on their own counters while they have room and never
-- change what the enforce gates take. A peek is decided on phase 1's values.
create or replace function rl_take(p_call int[], p_keys text[], p_windows bigint[], p_limits bigint[], p_enforce boolean[],
                                   p_expires timestamptz[], p_costs bigint[], p_consume boolean[],
                                   p_algorithms text[] default null, p_window_ns bigint[] default null,
                                   p_bursts bigint[] default null, p_now bigint[] default null,
                                   out allowed boolean[], out counts bigint[], out room boolean[], out previous bigint[])
    language plpgsql
    -- Every statement here looks up a few rows by primary key. Plans are
    -- cached per connection, and one made while the table was small would
    -- keep scanning the whole table long after it has grown (002 has the
    -- figures). Without sequential scans the cached plans are index
    -- lookups whatever the statistics said when they were made.
    set enable_seqscan = off
    set enable_bitmapscan = off
    set plan_cache_mode = force_generic_plan
as
$$
declare
    n int := coalesce(array_length(p_keys, 1), 0);
    m int := coalesce(array_length(p_costs, 1), 0);
    -- The calls the statement decides: 0 for all of them, d for call d.
    v_only int := 0;
    -- Whether the batch path decides (more than one call, until it
    -- hands the calls to the one-call path one at a time).
    v_batch boolean := m > 1;
    v_st text;
    a_allowed boolean[];
    a_counts bigint[];
    a_room boolean[];
    a_prev bigint[];
    a_ord int[];
    tries int := 0;
    i int;
    j int;
    d int;
    s0 int;
    ok boolean;
    -- the batch path's per-gate numbers, per-call phase 1, and counters
    b_thr bigint[];
    b_inc bigint[];
    b_flo bigint[];
    b_fits boolean[];
    b_snap bigint[];
    b_prev bigint[];
    b_alg text[];
    b_tau bigint[];
    b_cand boolean[];
    b_take boolean[];
    b_slot int[];
    u_keys text[];
    u_wins bigint[];
    u_vals bigint[];
    u_orig bigint[];
    u_alg text[];
    u_tau bigint[];
begin
    if n = 0 then
        allowed := array_fill(true, array[greatest(m, 1)]);
        room := array_fill(true, array[1]);
        counts := '{}';
        previous := '{}';
        return;
    end if;
    -- A write commits without waiting for the WAL flush: a crash may forget
    -- the last fraction of a second of increments (at worst a few extra
    -- calls pass), while a durable commit per decision caps throughput at
    -- the disk's flush rate (docs/design.md has the figures). The table
    -- stays logged: it survives restarts and reaches replicas.
    perform set_config('synchronous_commit', 'off', true);
    loop
        if not v_batch then
        -- One call (call v_only, or the only one): lock the counters of the
        -- gates with room in key order, check them, and take in the same
        -- statement, or write nothing.
        with g as (
            select * from rl_take_gates(p_call, p_keys, p_windows, p_limits, p_enforce, p_expires, p_costs, p_consume,
                                        p_algorithms, p_window_ns, p_bursts, p_now, greatest(v_only, 1))
        ), lk as (
            select c.key, c.window_index, c.count, g.ord, g.enf, g.thr, g.inc, g.flo, g.alg, g.tau,
                   c.count <= g.thr as has_room
            from g
            join rl_counters c on c.key = g.key and c.window_index = g.win
            -- a candidate (consuming, every enforce gate with room) whose
            -- rows all exist
            where g.fits and (select bool_and(g.consume and (g.fits or not g.enf) and not (g.fits and g.snap is null)) from g)
            order by c.key, c.window_index
            for update of c
        ), ok as (
            select coalesce(bool_and(lk.has_room or not lk.enf), true) as ok, count(*) as locked from lk
        ), up as (
            update rl_counters c
            set count = greatest(lk.count + lk.inc, lk.flo + lk.inc),
                -- a bucket's row expires once it is full again: moved on
                -- (to TAT + tau) only when the TAT passes it, so most takes
                -- change no indexed column and stay HOT updates
                expires_at = case when lk.alg = 'token_bucket' and c.expires_at
                                       < timestamptz 'epoch' + greatest(lk.count + lk.inc, lk.flo + lk.inc) / 1000 * interval '1 microsecond'
                                  then timestamptz 'epoch' + (greatest(lk.count + lk.inc, lk.flo + lk.inc) + lk.tau) / 1000 * interval '1 microsecond'
                                  else c.expires_at end
            from lk
            where c.key = lk.key and c.window_index = lk.window_index and lk.has_room and (select ok.ok from ok)
        )
        select case when not bool_and(g.consume and (g.fits or not g.enf)) then 'done' -- denied on phase 1, or a peek
                    when bool_or(g.fits and g.snap is null) then 'missing'
                    when min(ok.locked) < count(*) filter (where g.fits) then 'missing' -- removed since phase 1
                    else 'done' end,
               array[bool_and(g.fits or not g.enf) and (not bool_and(g.consume) or bool_and(ok.ok))],
               array_agg(case when lk.key is null then coalesce(g.snap, 0)
                              when ok.ok and lk.has_room then greatest(lk.count + lk.inc, lk.flo + lk.inc)
                              else lk.count end order by g.ord),
               array_agg(case when lk.key is null then g.fits else lk.has_room end order by g.ord),
               array_agg(case when g.alg = 'sliding_window' then g.prev else 0 end order by g.ord),
               array_agg(g.ord order by g.ord)
        into v_st, a_allowed, a_counts, a_room, a_prev, a_ord
        from g
        left join lk on lk.ord = g.ord
        cross join ok;
        if v_st = 'missing' then
            -- The first call of a window (or of a full bucket) creates its
            -- rows, and runs again to lock them. Nothing is locked yet, so
            -- this insert never waits holding a lock someone waits for.
            insert into rl_counters (key, window_index, count, expires_at)
            select g.key, g.win, 0,
                   case when g.alg = 'token_bucket'
                        then timestamptz 'epoch' + (g.now_ns + g.tau) / 1000 * interval '1 microsecond'
                        else g.exp end
            from rl_take_gates(p_call, p_keys, p_windows, p_limits, p_enforce, p_expires, p_costs, p_consume,
                               p_algorithms, p_window_ns, p_bursts, p_now, greatest(v_only, 1)) g
            where g.fits and g.snap is null
            order by g.key, g.win
            on conflict (key, window_index) do nothing;
        end if;
        else
        -- A batch: read every gate's numbers,
        -- lock the counters the calls that look allowed would take, once,
        -- in key order, decide the calls one after another on the locked
        -- values, and write each counter once.
        select array_agg(g.thr order by g.ord), array_agg(g.inc order by g.ord), array_agg(g.flo order by g.ord),
               array_agg(g.fits order by g.ord), array_agg(g.snap order by g.ord), array_agg(g.prev order by g.ord),
               array_agg(g.alg order by g.ord), array_agg(g.tau order by g.ord)
        into b_thr, b_inc, b_flo, b_fits, b_snap, b_prev, b_alg, b_tau
        from rl_take_gates(p_call, p_keys, p_windows, p_limits, p_enforce, p_expires, p_costs, p_consume,
                           p_algorithms, p_window_ns, p_bursts, p_now, 0) g;
        -- Phase 1 per call: a candidate consumes and every enforce gate fits.
        b_cand := array_fill(false, array[m]);
        b_take := array_fill(false, array[n]);
        allowed := array_fill(true, array[m]);
        for i in 1..n loop
            if p_enforce[i] and not b_fits[i] then
                allowed[p_call[i]] := false;
            end if;
        end loop;
        v_st := 'done';
        for i in 1..n loop
            b_cand[p_call[i]] := allowed[p_call[i]] and p_consume[p_call[i]];
        end loop;
        for i in 1..n loop
            b_take[i] := b_cand[p_call[i]] and b_fits[i];
            if b_take[i] and b_snap[i] is null then
                v_st := 'missing';
            end if;
        end loop;
        -- A sliding window whose previous window the batch writes read it
        -- before the batch's own takes: decide one call at a time.
        if v_st = 'done' and 'sliding_window' = any (b_alg) and exists (
                select 1 from unnest(p_keys, p_windows, b_alg) as x(key, win, alg)
                join unnest(p_keys, p_windows, b_take) as y(key, win, take) on y.key = x.key and y.win = x.win - 1
                where x.alg = 'sliding_window' and y.take) then
            v_st := 'slow';
        end if;
        if v_st = 'missing' then
            insert into rl_counters (key, window_index, count, expires_at)
            select distinct on (g.key, g.win) g.key, g.win, 0,
                   case when g.alg = 'token_bucket' then timestamptz 'epoch' + (t.now + g.tau) / 1000 * interval '1 microsecond'
                        else g.exp end
            from unnest(p_keys, p_windows, p_expires, b_alg, b_tau, b_take, b_snap, p_call)
                 as g(key, win, exp, alg, tau, take, snap, call)
            cross join lateral (select coalesce(p_now[g.call], 0) as now) t
            where g.take and g.snap is null
            order by g.key, g.win
            on conflict (key, window_index) do nothing;
        elsif v_st = 'done' then
            -- Lock the counters to take, in key order; number them, and map
            -- every gate to its counter's slot.
            with l as (
                select c.key, c.window_index, c.count from rl_counters c
                join (select distinct x.key, x.win from unnest(p_keys, p_windows, b_take) as x(key, win, take) where x.take) u
                  on c.key = u.key and c.window_index = u.win
                order by c.key, c.window_index
                for update of c
            ), nl as (
                select l.*, row_number() over (order by l.key, l.window_index)::int as slot from l
            )
            select array_agg(nl.key order by nl.slot), array_agg(nl.window_index order by nl.slot),
                   array_agg(nl.count order by nl.slot),
                   (select array_agg(y.slot order by x.o)
                    from unnest(p_keys, p_windows) with ordinality as x(key, win, o)
                    left join nl y on y.key = x.key and y.window_index = x.win)
            into u_keys, u_wins, u_vals, b_slot
            from nl;
            u_orig := u_vals;
            u_alg := array_fill(null::text, array[greatest(coalesce(array_length(u_keys, 1), 0), 1)]);
            u_tau := array_fill(null::bigint, array[greatest(coalesce(array_length(u_keys, 1), 0), 1)]);
            a_counts := array_fill(0::bigint, array[n]);
            a_room := array_fill(false, array[n]);
            a_prev := array_fill(0::bigint, array[n]);
            a_allowed := allowed;
            i := 1;
            for d in 1..m loop
                s0 := i;
                while i <= n and p_call[i] = d loop
                    if b_take[i] and b_slot[i] is null then
                        v_st := 'missing'; -- removed since phase 1 (the sweep): again
                    end if;
                    i := i + 1;
                end loop;
                exit when v_st <> 'done';
                ok := b_cand[d];
                for j in s0..i - 1 loop
                    if b_take[j] and p_enforce[j] and u_vals[b_slot[j]] > b_thr[j] then
                        ok := false;
                    end if;
                end loop;
                if b_cand[d] then
                    a_allowed[d] := ok;
                end if;
                for j in s0..i - 1 loop
                    if b_alg[j] = 'sliding_window' then
                        a_prev[j] := b_prev[j];
                    end if;
                    if not b_take[j] then
                        a_counts[j] := coalesce(b_snap[j], 0);
                        a_room[j] := b_fits[j];
                        continue;
                    end if;
                    a_room[j] := u_vals[b_slot[j]] <= b_thr[j];
                    if ok and a_room[j] then
                        u_vals[b_slot[j]] := greatest(u_vals[b_slot[j]] + b_inc[j], b_flo[j] + b_inc[j]);
                        u_alg[b_slot[j]] := b_alg[j];
                        u_tau[b_slot[j]] := b_tau[j];
                    end if;
                    a_counts[j] := u_vals[b_slot[j]];
                end loop;
            end loop;
            if v_st = 'done' then
                update rl_counters c
                set count = u.val,
                    expires_at = case when u.alg = 'token_bucket' and c.expires_at
                                           < timestamptz 'epoch' + u.val / 1000 * interval '1 microsecond'
                                      then timestamptz 'epoch' + (u.val + u.tau) / 1000 * interval '1 microsecond'
                                      else c.expires_at end
                from unnest(u_keys, u_wins, u_vals, u_orig, u_alg, u_tau) as u(key, win, val, orig, alg, tau)
                where c.key = u.key and c.window_index = u.win and u.val <> u.orig;
                a_ord := null;
            end if;
        end if;
        end if;

        if v_st = 'missing' then
            tries := tries + 1;
            if tries > 3 then
                raise exception 'rl_take: counters keep disappearing while being taken'
                    using errcode = 'serialization_failure';
            end if;
            continue;
        end if;
        if v_st = 'slow' then
            -- Keep the locks taken (or take them now, in key order) and
            -- decide the calls one at a time.
            perform 1 from (
                select c.key from rl_counters c
                join (select distinct g.key, g.win
                      from unnest(p_call, p_keys, p_windows) as g(call, key, win)
                      where p_consume[g.call]) x on c.key = x.key and c.window_index = x.win
                order by c.key, c.window_index
                for update of c) l;
            allowed := array_fill(false, array[m]);
            counts := array_fill(0::bigint, array[n]);
            room := array_fill(false, array[n]);
            previous := array_fill(0::bigint, array[n]);
            v_only := 1;
            v_batch := false;
            continue;
        end if;
        if v_st is null then
            -- call v_only has no gates: allowed, nothing to count
            allowed[v_only] := true;
        elsif v_only = 0 then
            allowed := a_allowed;
            counts := a_counts;
            room := a_room;
            previous := a_prev;
            return;
        else
            allowed[v_only] := a_allowed[1];
        end if;
        for i in 1..coalesce(array_length(a_ord, 1), 0) loop
            counts[a_ord[i]] := a_counts[i];
            room[a_ord[i]] := a_room[i];
            previous[a_ord[i]] := a_prev[i];
        end loop;
        tries := 0;
        v_only := v_only + 1;
        if v_only > m then
            return;
        end if;
    end loop;
end
$$;
