-- Enforcement counters, shared by every gateway replica.
--
-- A counter is one gate's count in one fixed window: the key names the gate
-- (definition and subject), window_index is floor(epoch / window_seconds).
-- Because the window index is part of the key, a new window starts from zero
-- with no reset job; old rows are only garbage, removed in bounded batches by
-- one replica at a time (expires_at).
create table rl_counters (
    key          text        not null,
    window_index bigint      not null,
    count        bigint      not null,
    expires_at   timestamptz not null,
    primary key (key, window_index),
    constraint rl_counters_count check (count >= 0)
);

create index rl_counters_expires_idx on rl_counters (expires_at);

-- rl_take decides one call against all its gates in one round trip.
--
--   p_keys, p_windows   the gates' counters, sorted by (key, window) by the
--                       caller so concurrent decisions lock rows in one order
--                       and never deadlock
--   p_limits            each gate's limit
--   p_enforce           false for shadow gates: they count and report, never deny
--   p_expires           when each counter row may be removed
--   p_cost              what the call consumes on every gate
--   p_consume           false for a peek: read only
--
-- It returns whether the call is allowed, each gate's count after the
-- decision, and for each gate whether it had room (a shadow gate without
-- room "would deny").
--
-- All or nothing: a call denied by one enforce gate consumes nothing on any
-- gate. Counts only grow within a window, so a gate found full by a plain
-- read stays full: the common denial takes no lock and writes nothing
-- (phase 1). Only a call that looks allowed locks its rows, re-checks and
-- increments (phase 2).
create function rl_take(p_keys text[], p_windows bigint[], p_limits bigint[], p_enforce boolean[],
                        p_expires timestamptz[], p_cost bigint, p_consume boolean,
                        out allowed boolean, out counts bigint[], out room boolean[])
    language plpgsql as
$$
declare
    n int := coalesce(array_length(p_keys, 1), 0);
    i int;
begin
    allowed := true;
    room := array_fill(true, array[greatest(n, 1)]);
    if n = 0 then
        counts := '{}';
        return;
    end if;

    -- Phase 1: read without locks.
    select array_agg(coalesce(c.count, 0) order by k.ord) into counts
    from unnest(p_keys, p_windows) with ordinality as k(key, win, ord)
    left join rl_counters c on c.key = k.key and c.window_index = k.win;

    for i in 1..n loop
        if counts[i] + p_cost > p_limits[i] then
            room[i] := false;
            if p_enforce[i] then
                allowed := false;
            end if;
        end if;
    end loop;
    if not allowed or not p_consume then
        return;
    end if;

    -- Phase 2: make sure the rows exist, lock them in key order, re-check
    -- (another replica may have taken the last unit since phase 1), then
    -- take from every enforce gate and every shadow gate with room.
    --
    -- The transaction commits without waiting for the WAL flush: a crash
    -- may forget the last fraction of a second of increments (at worst a
    -- few extra calls are let through), while a durable commit per decision
    -- caps throughput at the disk's flush rate (docs/design.md has the
    -- figures). The table itself stays logged: it survives restarts and
    -- reaches replicas, unlike an UNLOGGED one.
    perform set_config('synchronous_commit', 'off', true);

    insert into rl_counters (key, window_index, count, expires_at)
    select k.key, k.win, 0, k.exp
    from unnest(p_keys, p_windows, p_expires) as k(key, win, exp)
    order by k.key, k.win
    on conflict (key, window_index) do nothing;

    select array_agg(c.count order by k.ord) into counts
    from unnest(p_keys, p_windows) with ordinality as k(key, win, ord)
    join lateral (select count from rl_counters
                  where key = k.key and window_index = k.win for update) c on true;

    for i in 1..n loop
        room[i] := counts[i] + p_cost <= p_limits[i];
        if p_enforce[i] and not room[i] then
            allowed := false;
        end if;
    end loop;
    if not allowed then
        return;
    end if;

    update rl_counters c set count = c.count + p_cost
    from unnest(p_keys, p_windows, room) as k(key, win, has_room)
    where c.key = k.key and c.window_index = k.win and k.has_room;

    for i in 1..n loop
        if room[i] then
            counts[i] := counts[i] + p_cost;
        end if;
    end loop;
end
$$;

---- create above / drop below ----

drop function rl_take(text[], bigint[], bigint[], boolean[], timestamptz[], bigint, boolean);
drop table rl_counters;
