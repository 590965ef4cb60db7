{{/*
rl_take as migration 002 created it, the version every database ran up to
migration 005: migration 006 restores it when rolled back. The text from
"create" to the closing "$$;" is 002's, word for word, except "create or
replace" (migrations/shared_test.go holds that). Never edit this file: a
later version of rl_take goes in a new file here.
*/}}
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
    i int;
    j int;
    s int;
    d int;
    ok boolean;
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

    -- One call (the common case at low load): lock its rows in key order
    -- and take in the same statement. A gate found past its limit lost a
    -- race since phase 1; it is given back before anyone can see it (the
    -- rows are still locked), all of them when it is an enforce gate.
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
        select array_agg(t.count order by k.ord) into counts
        from unnest(p_keys, p_windows) with ordinality as k(key, win, ord)
        left join taken t on t.key = k.key and t.window_index = k.win;

        ok := true;
        for i in 1..n loop
            if room[i] and counts[i] is not null and counts[i] > p_limits[i] and p_enforce[i] then
                ok := false;
            end if;
        end loop;
        allowed[1] := ok;
        for i in 1..n loop
            if room[i] and counts[i] is not null and (not ok or counts[i] > p_limits[i]) then
                update rl_counters set count = count - p_costs[1] where key = p_keys[i] and window_index = p_windows[i];
                counts[i] := counts[i] - p_costs[1];
                room[i] := counts[i] + p_costs[1] <= p_limits[i];
            elsif counts[i] is null then
                select c.count into v from rl_counters c where c.key = p_keys[i] and c.window_index = p_windows[i];
                counts[i] := coalesce(v, 0);
                room[i] := room[i] and counts[i] + p_costs[1] <= p_limits[i];
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

    -- Decide the candidates in order against the locked counts.
    i := 1;
    for d in 1..m loop
        s := i;
        while i <= n and p_call[i] = d loop
            i := i + 1;
        end loop;
        if not candidate[d] then
            for j in s..i - 1 loop
                counts[j] := coalesce(counts[j], 0);
            end loop;
            continue;
        end if;
        ok := true;
        for j in s..i - 1 loop
            if p_enforce[j] and ucounts[uidx[j]] + p_costs[d] > p_limits[j] then
                ok := false;
            end if;
        end loop;
        allowed[d] := ok;
        for j in s..i - 1 loop
            room[j] := ucounts[uidx[j]] + p_costs[d] <= p_limits[j];
            if ok and room[j] then
                ucounts[uidx[j]] := ucounts[uidx[j]] + p_costs[d];
            end if;
            counts[j] := ucounts[uidx[j]];
        end loop;
    end loop;

    update rl_counters c set count = u.cnt
    from unnest(ukeys, uwins, ucounts, uorig) as u(key, win, cnt, orig)
    where c.key = u.key and c.window_index = u.win and u.cnt <> u.orig;
end
$$;
