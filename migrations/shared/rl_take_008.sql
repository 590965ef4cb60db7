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
--                         bucket's row expires at its TAT instead)
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
-- Each is written here as "the value before the call is at most a
-- threshold" (thr) and "taking sets v to greatest(v + inc, flo + inc)"
-- (flo: now for a token bucket, none for the windows), so that a run of
-- calls on one counter composes: after takes 1..k the value is
-- greatest(v0 + A_k, B_k), A_k the sum of the increments, B_k the
-- greatest of flo_j + (the increments from j on). That lets one statement
-- decide a whole batch on the rows as it locked them.
--
-- The statement, in order:
-- 1. Read every gate without locks (phase 1). Values only move towards
--    "no room" while a call waits (counts grow, a TAT only moves later; a
--    reset, which gives room, is the exception), so a gate found without
--    room stays so: a call denied here takes no lock and writes nothing.
-- 2. If a counter the calls would take is missing, insert it (count 0; a
--    token bucket's TAT 0, a full bucket) and run again: the second run
--    sees it. Nothing is locked before that insert, so inserts never wait
--    while holding a lock another decision waits for.
-- 3. Lock the counters the calls would take, in (key, window) order, so
--    concurrent decisions never deadlock, and check on the locked values
--    that every call of the batch is allowed. If so, write every counter
--    once (its value after all the calls) in the same statement: the
--    common case is one statement and one write per counter. A lone call
--    that fails the check is denied, writing nothing.
-- 4. A batch that fails the check (some call lost a race, or the calls
--    interfere: a sliding window reading as its previous window a counter
--    the batch writes) keeps its locks and decides its calls one at a time
--    by the same statement, each seeing the ones before.
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
    v_multi boolean := m > 1;
    -- Whether the batch statement decides (calls share counters).
    v_batch boolean := false;
    v_st text;
    a_allowed boolean[];
    a_counts bigint[];
    a_room boolean[];
    a_prev bigint[];
    a_ord int[];
    tries int := 0;
    i int;
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
        if v_only > 0 or not v_multi then
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
        elsif not v_batch then
        -- A batch whose calls share no counter (calls on different keys):
        -- each call is decided on its own rows.
        -- Lock the rows of the gates with room of the calls that look
        -- allowed, in key order, check each call on them, and take for the
        -- calls that still fit, in the same statement.
        -- (No joins between the statement's own row sets: a generic plan
        -- guesses one row for each and would nest loops over them.)
        with g as (
            select g.*,
                   bool_and(g.fits or not g.enf) over (partition by g.call) as call_fits,
                   bool_and(g.consume and (g.fits or not g.enf)) over (partition by g.call) as candidate
            from rl_take_gates(p_call, p_keys, p_windows, p_limits, p_enforce, p_expires, p_costs, p_consume,
                               p_algorithms, p_window_ns, p_bursts, p_now, v_only) g
        ), status as (
            select case when bool_or(g.candidate and g.fits and g.snap is null) then 'missing'
                        when v_only = 0 and v_multi
                             and count(*) filter (where g.candidate and g.fits)
                                 <> count(distinct (g.key, g.win)) filter (where g.candidate and g.fits) then 'shared'
                        else 'lock' end as st,
                   count(*) filter (where g.candidate and g.fits) as takes
            from g
        ), lk as (
            select c.key, c.window_index, c.count, g.ord, g.call, g.call_fits, g.enf, g.thr, g.inc, g.flo, g.alg, g.tau, g.prev,
                   c.count <= g.thr as has_room
            from g
            join rl_counters c on c.key = g.key and c.window_index = g.win
            where g.candidate and g.fits and (select status.st from status) = 'lock'
            order by c.key, c.window_index
            for update of c
        ), lk2 as (
            select lk.*, bool_and(lk.has_room or not lk.enf) over (partition by lk.call) as call_ok from lk
        ), up as (
            update rl_counters c
            set count = greatest(lk2.count + lk2.inc, lk2.flo + lk2.inc),
                -- a bucket's row expires once it is full again: moved on
                -- (to TAT + tau) only when the TAT passes it, so most takes
                -- change no indexed column and stay HOT updates
                expires_at = case when lk2.alg = 'token_bucket' and c.expires_at
                                       < timestamptz 'epoch' + greatest(lk2.count + lk2.inc, lk2.flo + lk2.inc) / 1000 * interval '1 microsecond'
                                  then timestamptz 'epoch' + (greatest(lk2.count + lk2.inc, lk2.flo + lk2.inc) + lk2.tau) / 1000 * interval '1 microsecond'
                                  else c.expires_at end
            from lk2
            where c.key = lk2.key and c.window_index = lk2.window_index and lk2.has_room and lk2.call_ok
        ), r as (
            -- every gate once: as locked, or as read
            select lk2.ord, lk2.call, lk2.call_fits, true as candidate, lk2.call_ok,
                   case when lk2.call_ok and lk2.has_room then greatest(lk2.count + lk2.inc, lk2.flo + lk2.inc)
                        else lk2.count end as val,
                   lk2.has_room as room, lk2.alg, lk2.prev
            from lk2
            union all
            select g.ord, g.call, g.call_fits, g.candidate, null, coalesce(g.snap, 0), g.fits, g.alg, g.prev
            from g
            where not (g.candidate and g.fits and (select status.st from status) = 'lock')
        )
        select case when (select status.st from status) <> 'lock' then (select status.st from status)
                    -- a row removed since phase 1 (the sweep): again
                    when (select status.takes from status) > (select count(*) from lk2) then 'missing'
                    else 'done' end,
               -- per call; a call without gates is allowed
               (select array_agg(coalesce(x.ok, true) order by cs.call)
                from generate_series(1, m) cs(call)
                left join (select r.call, bool_and(r.call_fits) and (not bool_or(r.candidate) or coalesce(bool_and(r.call_ok), true)) as ok
                           from r group by r.call) x on x.call = cs.call
                where v_only = 0 or cs.call = v_only),
               array_agg(r.val order by r.ord),
               array_agg(r.room order by r.ord),
               array_agg(case when r.alg = 'sliding_window' then r.prev else 0 end order by r.ord),
               array_agg(r.ord order by r.ord)
        into v_st, a_allowed, a_counts, a_room, a_prev, a_ord
        from r;
        if v_st = 'missing' then
            -- The first call of a window (or of a full bucket) creates its
            -- rows, and runs again to lock them. Nothing is locked yet, so
            -- this insert never waits holding a lock someone waits for.
            insert into rl_counters (key, window_index, count, expires_at)
            select distinct on (g.key, g.win) g.key, g.win, 0,
                   case when g.alg = 'token_bucket'
                        then timestamptz 'epoch' + (g.now_ns + g.tau) / 1000 * interval '1 microsecond'
                        else g.exp end
            from (select g.*, bool_and(g.consume and (g.fits or not g.enf)) over (partition by g.call) as candidate
                  from rl_take_gates(p_call, p_keys, p_windows, p_limits, p_enforce, p_expires, p_costs, p_consume,
                                     p_algorithms, p_window_ns, p_bursts, p_now, v_only) g) g
            where g.candidate and g.fits and g.snap is null
            order by g.key, g.win
            on conflict (key, window_index) do nothing;
        elsif v_st = 'shared' then
            v_batch := true;
            continue;
        end if;
        else
        -- A batch: decide every call at once, if it can (see above).
        with b as (
            select * from rl_take_gates(p_call, p_keys, p_windows, p_limits, p_enforce, p_expires, p_costs, p_consume,
                                        p_algorithms, p_window_ns, p_bursts, p_now, 0)
        ), cl as (
            select b.*, bool_and(b.fits or not b.enf) over (partition by b.call) as call_fits
            from b
        ), t as (
            -- What each gate would do if every call that fits on phase 1
            -- is allowed: take (inc, flo) or not, against threshold th.
            select cl.*, case when cl.take then cl.inc else 0 end as inc_t,
                   case when cl.take then cl.flo end as tflo, case when cl.take then cl.thr end as th
            from (select cl.*, cl.consume and cl.call_fits and cl.fits as take from cl) cl
        ), u as (
            select t.*, coalesce(sum(t.inc_t) over w1, 0)::bigint as a_prev
            from t
            window w1 as (partition by t.key, t.win order by t.ord rows between unbounded preceding and 1 preceding)
        ), s as (
            -- Per gate: F = greatest(flo_j - A_{j-1}) over the takes up to
            -- it (before it: f_prev; with it: f_incl); per counter: the
            -- threshold its locked value must meet (thr_all), its
            -- increment (inc_all) and floor (flo_all) after every take.
            select u.*,
                   max(u.tflo - u.a_prev) over w1 as f_prev,
                   max(u.tflo - u.a_prev) over w2 as f_incl,
                   min(u.th - u.a_prev) over wc as thr_all,
                   (sum(u.inc_t) over wc)::bigint as inc_all,
                   (sum(u.inc_t) over wc)::bigint + max(u.tflo - u.a_prev) over wc as flo_all
            from u
            window w1 as (partition by u.key, u.win order by u.ord rows between unbounded preceding and 1 preceding),
                   w2 as (partition by u.key, u.win order by u.ord rows between unbounded preceding and current row),
                   wc as (partition by u.key, u.win)
        ), status as (
            select case
                       when bool_or(s.inc_all > 0 and s.snap is null) then 'missing'
                       when v_multi and v_only = 0 and (
                           not bool_and(s.th is null or s.f_prev is null or s.a_prev + s.f_prev <= s.th)
                           or exists (select 1 from s x join s y on y.key = x.key and y.win = x.win - 1
                                      where x.alg = 'sliding_window' and y.inc_t > 0)) then 'slow'
                       else 'lock'
                   end as st
            from s
        ), ins as (
            insert into rl_counters (key, window_index, count, expires_at)
            select distinct on (s.key, s.win) s.key, s.win, 0,
                   case when s.alg = 'token_bucket'
                        then timestamptz 'epoch' + (s.now_ns + s.tau) / 1000 * interval '1 microsecond'
                        else s.exp end
            from s
            where s.inc_all > 0 and s.snap is null and (select status.st from status) = 'missing'
            order by s.key, s.win
            on conflict (key, window_index) do nothing
        ), cn as (
            select distinct on (s.key, s.win) s.key, s.win, s.alg, s.tau, s.thr_all, s.inc_all, s.flo_all
            from s
            where s.inc_all > 0
            order by s.key, s.win
        ), lk as (
            -- Phase 2: lock what the calls take, in key order.
            select c.key, c.window_index, c.count
            from rl_counters c
            join cn on c.key = cn.key and c.window_index = cn.win
            where (select status.st from status) = 'lock'
            order by c.key, c.window_index
            for update of c
        ), v as (
            -- Every counter the calls take, with its locked value.
            select cn.*, lk.count as v0, lk.count is not null as locked,
                   lk.count is not null and (cn.thr_all is null or lk.count <= cn.thr_all) as ok
            from cn left join lk on lk.key = cn.key and lk.window_index = cn.win
        ), dec as (
            select case
                       when (select status.st from status) <> 'lock' then (select status.st from status)
                       when not coalesce(bool_and(v.locked), true) then 'missing' -- removed since phase 1
                       when coalesce(bool_and(v.ok), true)
                            and (select coalesce(bool_and(s.th is null or s.f_prev is null or s.a_prev + s.f_prev <= s.th), true) from s)
                           then 'take'
                       when v_multi and v_only = 0 then 'slow'
                       else 'deny'
                   end as d
            from v
        ), up as (
            update rl_counters c
            set count = greatest(v.v0 + v.inc_all, v.flo_all),
                expires_at = case when v.alg = 'token_bucket' and c.expires_at
                                       < timestamptz 'epoch' + greatest(v.v0 + v.inc_all, v.flo_all) / 1000 * interval '1 microsecond'
                                  then timestamptz 'epoch' + (greatest(v.v0 + v.inc_all, v.flo_all) + v.tau) / 1000 * interval '1 microsecond'
                                  else c.expires_at end
            from v
            where c.key = v.key and c.window_index = v.win and (select dec.d from dec) = 'take'
        )
        select dec.d,
               -- per call; a call without gates is allowed
               (select array_agg(coalesce(x.ok, true) order by cs.call)
                from generate_series(1, m) cs(call)
                left join (select s.call, bool_and(s.call_fits) and not (dec.d = 'deny' and bool_and(s.consume)) as ok
                           from s group by s.call) x on x.call = cs.call
                where v_only = 0 or cs.call = v_only),
               array_agg(case when not s.take or v.v0 is null then coalesce(s.snap, 0)
                              when dec.d = 'take' then greatest(v.v0 + s.a_prev + s.inc_t, s.a_prev + s.inc_t + s.f_incl)
                              else greatest(v.v0 + s.a_prev, s.a_prev + s.f_prev) end order by s.ord),
               array_agg(case when not s.take or dec.d = 'take' then s.fits
                              else v.v0 is not null and greatest(v.v0 + s.a_prev, s.a_prev + s.f_prev) <= s.th end order by s.ord),
               array_agg(case when s.alg = 'sliding_window' then s.prev else 0 end order by s.ord),
               array_agg(s.ord order by s.ord)
        into v_st, a_allowed, a_counts, a_room, a_prev, a_ord
        from s
        left join v on v.key = s.key and v.win = s.win
        cross join dec
        group by dec.d;
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
