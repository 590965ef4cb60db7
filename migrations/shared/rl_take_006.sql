{{/*
rl_take and its arithmetic as migration 006 creates them. Kept here so that
the migration that next replaces rl_take can restore this version in its
rollback (a template action naming "shared/rl_take_006.sql"). Never edit this file
once 006 has landed: a later version goes in a new file here.
*/}}
-- rl_take_decide is rl_take's arithmetic, written once: both of rl_take's
-- paths (one call, a batch of calls) hand it the counts they read under
-- lock, and it decides the calls in order, each all or nothing. It reads
-- and writes no table.
--
--   p_call, p_limits,     as rl_take's: per gate, its call (gates grouped
--   p_enforce, p_costs    by call, in call order), limit and kind; per call,
--                         its cost
--   p_decide              per call: whether to decide it here (false: a
--                         call phase 1 already denied, or a peek; its
--                         answer stands and its counts are phase 1's)
--   p_slot                per gate: where in slots its counter is (calls
--                         sharing a counter share a slot)
--   p_open                per gate: whether it may take at all (false for a
--                         gate its path did not lock; it then neither takes
--                         nor denies, and has no room)
--   slots                 in: each counter's count before the calls; out:
--                         after them
--   allowed, counts, room in: phase 1's answers; out: the decisions
--
-- A gate fits when its count plus the call's cost is within its limit. A
-- call is allowed when every open enforce gate fits; a gate has room when
-- it is open and fits (a shadow gate without room "would deny"); an allowed
-- call adds its cost to every gate with room; counts are each counter after
-- the call, so a later call on the same counter sees it.
create or replace function rl_take_decide(p_call int[], p_limits bigint[], p_enforce boolean[], p_costs bigint[],
                                          p_decide boolean[], p_slot int[], p_open boolean[],
                                          inout slots bigint[], inout allowed boolean[], inout counts bigint[],
                                          inout room boolean[])
    language plpgsql
    immutable
as
$$
declare
    n int := coalesce(array_length(p_call, 1), 0);
    m int := coalesce(array_length(p_costs, 1), 0);
    i int := 1;
    j int;
    s int;
    d int;
    ok boolean;
begin
    for d in 1..m loop
        s := i;
        while i <= n and p_call[i] = d loop
            i := i + 1;
        end loop;
        if not p_decide[d] then
            for j in s..i - 1 loop
                counts[j] := coalesce(counts[j], 0);
            end loop;
            continue;
        end if;
        ok := true;
        for j in s..i - 1 loop
            if p_open[j] and p_enforce[j] and slots[p_slot[j]] + p_costs[d] > p_limits[j] then
                ok := false;
            end if;
        end loop;
        allowed[d] := ok;
        for j in s..i - 1 loop
            room[j] := p_open[j] and slots[p_slot[j]] + p_costs[d] <= p_limits[j];
            if ok and room[j] then
                slots[p_slot[j]] := slots[p_slot[j]] + p_costs[d];
            end if;
            counts[j] := slots[p_slot[j]];
        end loop;
    end loop;
end
$$;

-- rl_take decides a batch of calls, each against all its gates, in one
-- round trip. Gates arrive flattened and grouped by call:
--
--   p_call                which call (1..m) each gate belongs to
--   p_keys, p_windows     the gates' counters, sorted by (key, window) within
--                         each call
--   p_limits              each gate's limit
--   p_enforce             false for shadow gates: they count and report, never deny
--   p_expires             when each counter row may be removed
--   p_costs, p_consume    per call: what it consumes on every gate, and
--                         whether to consume at all (false for a peek)
--
-- It returns, per call, whether it is allowed, and per gate its count after
-- the batch and whether it had room for its call (a shadow gate without
-- room "would deny").
--
-- All or nothing: a call denied by one enforce gate consumes nothing on any
-- gate. Counts only grow within a window (a reset zeroes them, which only
-- gives room), so a gate found full by a plain read stays full: a call
-- denied by that read takes no lock and writes nothing (phase 1). The calls
-- that look allowed lock their rows in (key, window) order, so concurrent
-- batches never deadlock, and rl_take_decide decides them against the
-- locked counts (phase 2). The two paths differ only in how they lock and
-- write: one call locks and takes in one statement and gives back what
-- rl_take_decide refuses; a batch locks the union of its rows once and
-- writes the new counts in one statement.
create or replace function rl_take(p_call int[], p_keys text[], p_windows bigint[], p_limits bigint[], p_enforce boolean[],
                                   p_expires timestamptz[], p_costs bigint[], p_consume boolean[],
                                   out allowed boolean[], out counts bigint[], out room boolean[])
    language plpgsql
    -- Every statement here looks up a few rows by primary key. Plans are
    -- cached per connection, and one made while the table was small (a
    -- fresh window, a fresh database) would keep scanning the whole table
    -- long after it has grown: measured, a decision went from 0.5 ms to
    -- 4.5 ms at 30,000 counters. Without sequential scans the cached plans
    -- are index lookups whatever the statistics said when they were made.
    set enable_seqscan = off
as
$$
declare
    n int := coalesce(array_length(p_keys, 1), 0);
    m int := coalesce(array_length(p_costs, 1), 0);
    candidate boolean[];
    any_candidate boolean := false;
    any_missing boolean := false;
    v bigint;
    uidx int[];
    ukeys text[];
    uwins bigint[];
    ucounts bigint[];
    uorig bigint[];
    took bigint[];
    lockd boolean[];
    i int;
    d int;
begin
    allowed := array_fill(true, array[greatest(m, 1)]);
    room := array_fill(true, array[greatest(n, 1)]);
    counts := '{}';
    if n = 0 then
        return;
    end if;

    -- Phase 1: read without locks. A missing row counts as zero.
    select array_agg(c.count order by k.ord) into counts
    from unnest(p_keys, p_windows) with ordinality as k(key, win, ord)
    left join rl_counters c on c.key = k.key and c.window_index = k.win;

    for i in 1..n loop
        if coalesce(counts[i], 0) + p_costs[p_call[i]] > p_limits[i] then
            room[i] := false;
            if p_enforce[i] then
                allowed[p_call[i]] := false;
            end if;
        end if;
    end loop;
    candidate := array_fill(false, array[m]);
    for d in 1..m loop
        candidate[d] := allowed[d] and p_consume[d];
        any_candidate := any_candidate or candidate[d];
    end loop;
    if not any_candidate then
        for i in 1..n loop
            counts[i] := coalesce(counts[i], 0);
        end loop;
        return;
    end if;
    for i in 1..n loop
        if counts[i] is null and candidate[p_call[i]] then
            any_missing := true;
        end if;
    end loop;

    -- Phase 2. The transaction commits without waiting for the WAL flush:
    -- a crash may forget the last fraction of a second of increments (at
    -- worst a few extra calls pass), while a durable commit per decision
    -- caps throughput at the disk's flush rate (docs/design.md has the
    -- figures). The table stays logged: it survives restarts and reaches
    -- replicas, unlike an UNLOGGED one.
    set local synchronous_commit = off;

    -- The first call of a window creates its rows.
    if any_missing then
        insert into rl_counters (key, window_index, count, expires_at)
        select distinct on (k.key, k.win) k.key, k.win, 0, k.exp
        from unnest(p_keys, p_windows, p_expires, counts, p_call) as k(key, win, exp, cnt, call)
        where k.cnt is null and candidate[k.call]
        order by k.key, k.win
        on conflict (key, window_index) do nothing;
    end if;

    -- One call (the common case at low load): lock the rows of its gates
    -- that had room and take in the same statement, so an allowed call
    -- writes once. The counts before are the taken ones less the cost (the
    -- gates it did not lock, shadow gates found full, are read as they
    -- are). What rl_take_decide refuses, a call denied by an enforce gate
    -- that lost a race since phase 1 or a shadow gate that did, is given
    -- back before anyone can see it: the rows are still locked.
    if m = 1 then
        with locked as (
            select c.key, c.window_index from rl_counters c
            join unnest(p_keys, p_windows, room) as k(key, win, has_room)
              on c.key = k.key and c.window_index = k.win and k.has_room
            order by c.key, c.window_index
            for update of c
        ), taken as (
            update rl_counters c set count = c.count + p_costs[1]
            from locked l
            where c.key = l.key and c.window_index = l.window_index
            returning c.key, c.window_index, c.count
        )
        select array_agg(t.count order by k.ord) into took
        from unnest(p_keys, p_windows) with ordinality as k(key, win, ord)
        left join taken t on t.key = k.key and t.window_index = k.win;

        ucounts := took;
        lockd := array_fill(true, array[n]);
        uidx := array_fill(0, array[n]);
        for i in 1..n loop
            uidx[i] := i;
            if took[i] is null then
                lockd[i] := false;
                select c.count into v from rl_counters c where c.key = p_keys[i] and c.window_index = p_windows[i];
                ucounts[i] := coalesce(v, 0);
            else
                ucounts[i] := took[i] - p_costs[1];
            end if;
        end loop;
        select r.slots, r.allowed, r.counts, r.room into ucounts, allowed, counts, room
        from rl_take_decide(p_call, p_limits, p_enforce, p_costs, candidate, uidx, lockd, ucounts, allowed, counts, room) r;
        for i in 1..n loop
            if lockd[i] and counts[i] <> took[i] then
                update rl_counters set count = count - p_costs[1] where key = p_keys[i] and window_index = p_windows[i];
            end if;
        end loop;
        return;
    end if;

    -- Lock the candidates' rows once, in key order, read their counts, and
    -- map every gate to its row, in one statement.
    with locked as (
        select c.key, c.window_index, c.count
        from rl_counters c
        join (select distinct k.key, k.win from unnest(p_keys, p_windows, p_call) as k(key, win, call)
              where candidate[k.call]) u on c.key = u.key and c.window_index = u.win
        order by c.key, c.window_index
        for update of c
    ), numbered as (
        select l.key, l.window_index, l.count, row_number() over (order by l.key, l.window_index)::int as idx
        from locked l
    )
    select array_agg(x.key order by x.idx), array_agg(x.window_index order by x.idx), array_agg(x.count order by x.idx),
           (select array_agg(y.idx order by k.ord)
            from unnest(p_keys, p_windows) with ordinality as k(key, win, ord)
            left join numbered y on y.key = k.key and y.window_index = k.win)
    into ukeys, uwins, ucounts, uidx
    from numbered x;
    uorig := ucounts;

    select r.slots, r.allowed, r.counts, r.room into ucounts, allowed, counts, room
    from rl_take_decide(p_call, p_limits, p_enforce, p_costs, candidate, uidx, array_fill(true, array[n]), ucounts,
                        allowed, counts, room) r;

    update rl_counters c set count = u.cnt
    from unnest(ukeys, uwins, ucounts, uorig) as u(key, win, cnt, orig)
    where c.key = u.key and c.window_index = u.win and u.cnt <> u.orig;
end
$$;
