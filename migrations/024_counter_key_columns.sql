-- Counter keys' parts as plain columns. The counters API selects
-- rl_counters by caller, target and definition; until now those parts
-- were read back out of each key's text by SQL twins of the Go key parser
-- (rl_counter_caller, _target, _definition and their helpers), through
-- expression indexes on them. Every change to the key grammar meant
-- redefining those parsers and rebuilding the indexes, and every insert of
-- a counter ran them three times. Here the parts are columns that the
-- writer fills: the Go core computes them once per gate from its typed
-- key (counterkey.PartsOf) and rl_take_024 writes them when it inserts a
-- counter, so a new kind of key is a Go change alone.
--
-- What changes:
--
-- 1. rl_counters gets caller, target and definition (text, byte order,
--    null when a key has no such part: a caller bucket has a caller only,
--    a target definition's counter a target and a definition, the
--    failed-credential and escalation counters none). Kind, window and
--    algorithm get no column: the shared-bucket selector (a caller
--    definition's buckets) finds its callers through the caller index and
--    keeps those whose key starts with <kind><mark>|<window>|, a prefix
--    the key type writes. The columns are nullable without a default:
--    adding them rewrites nothing.
-- 2. The rows already stored are backfilled once, from the parsers the
--    expression indexes used (the same values those indexes held), so a
--    counter written before this migration is listed and reset by caller,
--    target and definition after it.
-- 3. The expression indexes are replaced by plain partial indexes of the
--    same names on the columns (where the part is not null): a caller
--    bucket's insert adds one index entry where it added three computed
--    ones, a failed-credential counter's none. A take changes no indexed
--    column, so its updates stay HOT as before.
-- 4. rl_take_024 is rl_take_012 (same arguments, arithmetic, locking
--    order and answers; 012 explains its steps) with three more arguments,
--    each gate's caller, target and definition ('' for none), written when
--    it inserts a counter. The Enforcer of this version calls it.
-- 5. A row inserted without any part gets them from the parsers, by a
--    trigger that runs only then (its WHEN clause is false for a row that
--    carries a part, so rl_take_024's inserts of definitions' counters
--    never call it). That is what keeps a rolling deploy whole: replicas
--    of the version before still call rl_take_012, which inserts key,
--    window, count and expiry only, and their counters are still listed
--    and reset by caller, target and definition. A counter without parts
--    (failed-credential, lockout, violation) also runs the parsers once
--    at its insert, as every insert did before.
--
-- The parsers are therefore kept, unchanged and not redefined here;
-- rl_counter_kind, _window and _algorithm are no longer read by rlctl.
-- Once no replica older than this version runs, a later migration can
-- drop rl_take_012, the trigger and every parser.
--
-- Running fleet: the migration is one transaction that holds rl_counters
-- in ACCESS EXCLUSIVE mode while it backfills and builds the three
-- indexes, so decisions on PostgreSQL counters wait for it (3.5-6 s for
-- 100,000 live counters on a busy 2-core machine; rows live for at most
-- two windows, so the table holds the live counters only). Replicas of either version
-- count on the same rows and lock them in the same order throughout. An
-- rlapi of the version before still answers its counters API, but by
-- reading every counter through the parsers (its queries name them, and
-- their indexes are gone): slow on a large table until it is replaced.

alter table rl_counters
    add column caller text collate "C",
    add column target text collate "C",
    add column definition text collate "C";

drop index rl_counters_caller_idx;
drop index rl_counters_target_idx;
drop index rl_counters_definition_idx;

with p as (
    select ctid, rl_counter_caller(key) as caller, rl_counter_target(key) as target,
           rl_counter_definition(key) as definition
    from rl_counters
)
update rl_counters c
set caller = p.caller, target = p.target, definition = p.definition
from p
where c.ctid = p.ctid and (p.caller is not null or p.target is not null or p.definition is not null);

create index rl_counters_caller_idx on rl_counters (caller) where caller is not null;
create index rl_counters_target_idx on rl_counters (target) where target is not null;
create index rl_counters_definition_idx on rl_counters (definition) where definition is not null;

-- The parts of a row inserted without any (see 5 above).
create function rl_counters_parts_from_key() returns trigger
    language plpgsql as
$$
begin
    new.caller := rl_counter_caller(new.key);
    new.target := rl_counter_target(new.key);
    new.definition := rl_counter_definition(new.key);
    return new;
end
$$;

create trigger rl_counters_parts_from_key
    before insert on rl_counters
    for each row
    when (new.caller is null and new.target is null and new.definition is null)
    execute function rl_counters_parts_from_key();

create function rl_take_024(p_call int[], p_keys text[], p_windows bigint[], p_limits bigint[], p_enforce boolean[],
                            p_expires timestamptz[], p_costs bigint[], p_consume boolean[],
                            p_algorithms text[], p_window_ns bigint[], p_bursts bigint[], p_now bigint[],
                            p_callers text[], p_targets text[], p_definitions text[],
                            out allowed boolean[], out counts bigint[], out room boolean[], out previous bigint[])
    language plpgsql
as
$$
declare
    n int := coalesce(array_length(p_keys, 1), 0);
    m int := coalesce(array_length(p_costs, 1), 0);
    -- products saturate here, far beyond any clock
    c_big constant bigint := 4611686018427387903;
    v_tries int := 0;
    v_missing boolean;
    v_sw boolean;
    i int;
    d int;
    v_ok boolean;
    v_b bigint;
    -- per gate
    a_snap bigint[];
    a_prv bigint[];
    a_alg text[];
    a_thr bigint[];
    a_inc bigint[];
    a_flo bigint[];
    a_tau bigint[];
    a_fits boolean[];
    a_take boolean[];
    a_slot int[];
    a_pslot int[];
    a_need boolean[];
    a_order int[];
    v_p int;
    v_u int;
    v_ntake int;
    -- per call
    a_cand boolean[];
    -- the locked counters, in key order
    u_keys text[];
    u_wins bigint[];
    u_vals bigint[];
    u_orig bigint[];
    u_alg text[];
    u_tau bigint[];
    -- arithmetic
    v_cost bigint;
    v_now bigint;
    v_lim bigint;
    v_t bigint;
    v_w bigint;
    v_x bigint;
begin
    if n = 0 then
        allowed := array_fill(true, array[greatest(m, 1)]);
        room := array_fill(true, array[1]);
        counts := '{}';
        previous := '{}';
        return;
    end if;
    -- Asynchronous commit: see 008. The planner settings: see 012.
    perform set_config('synchronous_commit', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true),
            set_config('enable_seqscan', 'off', true), set_config('enable_bitmapscan', 'off', true);
    v_sw := 'sliding_window' = any (p_algorithms);
    loop
        -- 1. Read every gate without locks.
        if v_sw then
            select array_agg(c.count order by u.o), array_agg(coalesce(pv.count, 0) order by u.o)
            into a_snap, a_prv
            from unnest(p_keys, p_windows, p_algorithms) with ordinality as u(key, win, alg, o)
            left join rl_counters c on c.key = u.key and c.window_index = u.win
            -- (offset 0 keeps the lookup a subquery that only a sliding
            -- window runs)
            left join lateral (select pv.count from rl_counters pv
                               where u.alg = 'sliding_window' and pv.key = u.key and pv.window_index = u.win - 1
                               offset 0) pv on true;
        else
            select array_agg(c.count order by u.o)
            into a_snap
            from unnest(p_keys, p_windows) with ordinality as u(key, win, o)
            left join rl_counters c on c.key = u.key and c.window_index = u.win;
            a_prv := array_fill(0::bigint, array[n]);
        end if;
        -- The arithmetic, per gate (008's rl_take_gates).
        a_alg := array_fill(null::text, array[n]);
        a_thr := array_fill(null::bigint, array[n]);
        a_inc := array_fill(null::bigint, array[n]);
        a_flo := array_fill(null::bigint, array[n]);
        a_tau := array_fill(null::bigint, array[n]);
        a_fits := array_fill(false, array[n]);
        for i in 1..n loop
            d := p_call[i];
            v_cost := p_costs[d];
            v_lim := p_limits[i];
            a_alg[i] := coalesce(p_algorithms[i], 'fixed_window');
            if a_alg[i] = 'token_bucket' then
                v_now := coalesce(p_now[d], 0);
                -- T = ceil(window / limit); inc = cost * T, tau = burst * T
                v_t := greatest((coalesce(p_window_ns[i], 0) + v_lim - 1) / v_lim, 1);
                a_inc[i] := case when v_cost > c_big / v_t then c_big else v_cost * v_t end;
                v_b := coalesce(nullif(p_bursts[i], 0), v_lim);
                a_tau[i] := case when v_b > c_big / v_t then c_big else v_b * v_t end;
                -- room iff TAT <= now + tau - cost * T
                a_thr[i] := case when v_cost <= v_b then v_now + a_tau[i] - a_inc[i] else -1 end;
                a_flo[i] := v_now;
                a_fits[i] := coalesce(a_snap[i], 0) <= a_thr[i];
            else
                if a_alg[i] = 'sliding_window' then
                    -- room iff count + cost <= floor((limit * W - prev * (W - e)) / W)
                    v_now := coalesce(p_now[d], 0);
                    v_w := coalesce(p_window_ns[i], 0) / 1000000;
                    v_x := v_lim * v_w - a_prv[i] * (v_w - (v_now / 1000000 - p_windows[i] * v_w));
                    v_b := case when v_x >= 0 then v_x / v_w else -((v_w - 1 - v_x) / v_w) end;
                else
                    v_b := v_lim; -- room iff count + cost <= limit
                end if;
                a_thr[i] := v_b - v_cost;
                a_inc[i] := v_cost;
                -- (count + cost as written: a cost that overflows a count
                -- is refused by PostgreSQL, as before)
                a_fits[i] := coalesce(a_snap[i], 0) + v_cost <= v_b;
            end if;
        end loop;
        -- Candidates: consuming calls whose enforce gates all have room.
        allowed := array_fill(true, array[m]);
        for i in 1..n loop
            if p_enforce[i] and not a_fits[i] then
                allowed[p_call[i]] := false;
            end if;
        end loop;
        a_cand := array_fill(false, array[m]);
        for d in 1..m loop
            a_cand[d] := allowed[d] and p_consume[d];
        end loop;
        a_take := array_fill(false, array[n]);
        a_need := array_fill(false, array[n]);
        v_missing := false;
        v_ntake := 0;
        for i in 1..n loop
            a_take[i] := a_cand[p_call[i]] and a_fits[i];
            if a_take[i] then
                v_ntake := v_ntake + 1;
            end if;
            if a_take[i] and a_snap[i] is null then
                a_need[i] := true;
                v_missing := true;
            end if;
        end loop;
        if not (true = any (a_take)) then
            -- Nothing to take: every call denied on its reads, or a peek.
            counts := a_snap;
            for i in 1..n loop
                counts[i] := coalesce(a_snap[i], 0);
                if a_alg[i] <> 'sliding_window' then
                    a_prv[i] := 0;
                end if;
            end loop;
            room := a_fits;
            previous := a_prv;
            return;
        end if;
        if not v_missing and m = 1 then
            -- 3, 4 for one call: lock its counters to take in key order,
            -- check them, and take in the same statement, or write nothing.
            with lk as (
                select c.key, c.window_index, c.count, u.o, u.thr, u.inc, u.flo, u.tau, u.enf, u.alg
                from unnest(p_keys, p_windows, a_thr, a_inc, a_flo, a_tau, p_enforce, a_alg, a_take)
                     with ordinality as u(key, win, thr, inc, flo, tau, enf, alg, take, o)
                join rl_counters c on c.key = u.key and c.window_index = u.win
                where u.take
                order by c.key, c.window_index
                for update of c
            ), ok as (
                select count(*)::int as n, coalesce(bool_and(lk.count <= lk.thr or not lk.enf), true) as ok from lk
            ), up as (
                update rl_counters c
                set count = greatest(lk.count + lk.inc, lk.flo + lk.inc),
                    expires_at = case when lk.alg = 'token_bucket' and c.expires_at
                                           < timestamptz 'epoch' + greatest(lk.count + lk.inc, lk.flo + lk.inc) / 1000 * interval '1 microsecond'
                                      then timestamptz 'epoch' + (greatest(lk.count + lk.inc, lk.flo + lk.inc) + lk.tau) / 1000 * interval '1 microsecond'
                                      else c.expires_at end
                from lk, ok
                where ok.ok and ok.n = v_ntake and c.key = lk.key and c.window_index = lk.window_index and lk.count <= lk.thr
            )
            select ok.n, ok.ok, array_agg(lk.o::int), array_agg(lk.count)
            into v_u, v_ok, a_order, u_vals
            from ok left join lk on true
            group by ok.n, ok.ok;
            if v_u = v_ntake then
                counts := array_fill(0::bigint, array[n]);
                room := a_fits;
                previous := array_fill(0::bigint, array[n]);
                for i in 1..n loop
                    counts[i] := coalesce(a_snap[i], 0);
                    if a_alg[i] = 'sliding_window' then
                        previous[i] := a_prv[i];
                    end if;
                end loop;
                for v_p in 1..v_u loop
                    i := a_order[v_p];
                    room[i] := u_vals[v_p] <= a_thr[i];
                    counts[i] := case when v_ok and room[i] then greatest(u_vals[v_p] + a_inc[i], a_flo[i] + a_inc[i])
                                      else u_vals[v_p] end;
                end loop;
                allowed[1] := v_ok;
                return;
            end if;
            -- removed since the read (the sweep): again
            for i in 1..n loop
                a_need[i] := a_take[i] and not (i = any (a_order));
            end loop;
            v_missing := true;
        elsif not v_missing then
            -- 3. Lock the counters to take, once each, in key order; a
            -- taken gate's counter is the dense rank of its (key, window)
            -- among the taken gates' unless one was removed since the read.
            select array_agg(l.key), array_agg(l.window_index), array_agg(l.count),
                   (select array_agg(r.rk order by r.o)
                    from (select x.o, case when x.take then dense_rank() over (partition by x.take order by x.key, x.win) end::int as rk
                          from unnest(p_keys, p_windows, a_take) with ordinality as x(key, win, take, o)) r)
            into u_keys, u_wins, u_vals, a_slot
            from (select c.key, c.window_index, c.count from rl_counters c
                  where (c.key, c.window_index) in
                        (select x.key, x.win from unnest(p_keys, p_windows, a_take) as x(key, win, take) where x.take)
                  order by c.key, c.window_index
                  for update of c) l;
            v_u := coalesce(array_length(u_keys, 1), 0);
            v_p := 0;
            foreach i in array a_slot loop
                v_p := greatest(v_p, coalesce(i, 0));
            end loop;
            if v_u < v_p then
                -- removed since the read (the sweep): again
                select array_agg(x.take and not exists (select 1 from rl_counters c where c.key = x.key and c.window_index = x.win) order by x.o)
                into a_need
                from unnest(p_keys, p_windows, a_take) with ordinality as x(key, win, take, o);
                v_missing := true;
            end if;
        end if;
        if v_missing then
            -- 2. Create the missing counters (or those removed since the
            -- read) and read again. Only missing rows are inserted: an
            -- insert that met an existing row could wait on it while
            -- holding locks taken above, out of key order.
            v_tries := v_tries + 1;
            if v_tries > 3 then
                raise exception 'rl_take: counters keep disappearing while being taken'
                    using errcode = 'serialization_failure';
            end if;
            -- (with the key's parts: an empty one is none)
            insert into rl_counters (key, window_index, count, expires_at, caller, target, definition)
            select distinct on (g.key, g.win) g.key, g.win, 0,
                   case when g.alg = 'token_bucket'
                        then timestamptz 'epoch' + (coalesce(p_now[g.call], 0) + g.tau) / 1000 * interval '1 microsecond'
                        else g.exp end,
                   nullif(g.caller, ''), nullif(g.target, ''), nullif(g.def, '')
            from unnest(p_keys, p_windows, p_expires, a_alg, a_tau, a_need, p_call, p_callers, p_targets, p_definitions)
                 as g(key, win, exp, alg, tau, need, call, caller, target, def)
            where g.need
            order by g.key, g.win
            on conflict (key, window_index) do nothing;
            continue;
        end if;
        exit;
    end loop;
    -- A sliding window whose previous window is locked here reads it as
    -- the calls before it leave it.
    if v_sw and m > 1 then
        select array_agg(y.slot order by x.o)
        into a_pslot
        from unnest(p_keys, p_windows, a_alg) with ordinality as x(key, win, alg, o)
        left join (select k, w, s::int as slot from unnest(u_keys, u_wins) with ordinality as z(k, w, s)) y
          on x.alg = 'sliding_window' and y.k = x.key and y.w = x.win - 1;
    end if;
    -- Decide the calls in order on the locked values.
    u_orig := u_vals;
    u_alg := array_fill(null::text, array[array_length(u_keys, 1)]);
    u_tau := array_fill(null::bigint, array[array_length(u_keys, 1)]);
    counts := array_fill(0::bigint, array[n]);
    room := array_fill(false, array[n]);
    previous := array_fill(0::bigint, array[n]);
    i := 1;
    for d in 1..m loop
        -- the call's gates are p_call's run of d from i
        if a_pslot is not null then
            for j in i..n loop
                exit when p_call[j] <> d;
                if a_take[j] and a_pslot[j] is not null then
                    a_prv[j] := u_vals[a_pslot[j]];
                    v_cost := p_costs[d];
                    v_now := coalesce(p_now[d], 0);
                    v_w := coalesce(p_window_ns[j], 0) / 1000000;
                    v_x := p_limits[j] * v_w - a_prv[j] * (v_w - (v_now / 1000000 - p_windows[j] * v_w));
                    a_thr[j] := case when v_x >= 0 then v_x / v_w else -((v_w - 1 - v_x) / v_w) end - v_cost;
                end if;
            end loop;
        end if;
        v_ok := a_cand[d];
        for j in i..n loop
            exit when p_call[j] <> d;
            if a_take[j] and p_enforce[j] and u_vals[a_slot[j]] > a_thr[j] then
                v_ok := false;
            end if;
        end loop;
        if a_cand[d] then
            allowed[d] := v_ok;
        end if;
        while i <= n and p_call[i] = d loop
            if a_alg[i] = 'sliding_window' then
                previous[i] := a_prv[i];
            end if;
            if not a_take[i] then
                counts[i] := coalesce(a_snap[i], 0);
                room[i] := a_fits[i];
            else
                room[i] := u_vals[a_slot[i]] <= a_thr[i];
                if v_ok and room[i] then
                    u_vals[a_slot[i]] := greatest(u_vals[a_slot[i]] + a_inc[i], a_flo[i] + a_inc[i]);
                    u_alg[a_slot[i]] := a_alg[i];
                    u_tau[a_slot[i]] := a_tau[i];
                end if;
                counts[i] := u_vals[a_slot[i]];
            end if;
            i := i + 1;
        end loop;
    end loop;
    -- 4. Write each changed counter once. A bucket's row expires once it
    -- is full again: moved on (to TAT + tau) only when the TAT passes it,
    -- so most takes change no indexed column and stay HOT updates.
    update rl_counters c
    set count = u.val,
        expires_at = case when u.alg = 'token_bucket' and c.expires_at
                               < timestamptz 'epoch' + u.val / 1000 * interval '1 microsecond'
                          then timestamptz 'epoch' + (u.val + u.tau) / 1000 * interval '1 microsecond'
                          else c.expires_at end
    from unnest(u_keys, u_wins, u_vals, u_orig, u_alg, u_tau) as u(key, win, val, orig, alg, tau)
    where c.key = u.key and c.window_index = u.win and u.val <> u.orig;
end
$$;

---- create above / drop below ----

drop function rl_take_024(int[], text[], bigint[], bigint[], boolean[], timestamptz[], bigint[], boolean[], text[], bigint[], bigint[], bigint[],
                          text[], text[], text[]);

drop trigger rl_counters_parts_from_key on rl_counters;
drop function rl_counters_parts_from_key();

drop index rl_counters_definition_idx;
drop index rl_counters_target_idx;
drop index rl_counters_caller_idx;

alter table rl_counters
    drop column definition,
    drop column target,
    drop column caller;

-- 020's indexes
create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));
