-- Cheaper counter writes (issue 11, "Counting cheaply": docs/performance.md
-- has the figures). What a take writes is a few rows of rl_counters; two
-- things made those writes cost far more than the rows:
--
-- 1. The key-part indexes (rl_counters_caller_idx, _target_idx,
--    _definition_idx; 007, rebuilt by 009, 011, 013, 018) are on SQL
--    functions that PostgreSQL cannot inline there: each wrapper passes
--    rl_counter_unmarked(p_key), an expression, to an inner function that
--    uses its argument many times. Every statement that evaluates them
--    (an insert, an update that is not HOT) plans every nested function
--    afresh and runs each as a query of its own: measured, 1.7 ms of
--    backend CPU to evaluate the three for one key in one statement, so
--    the first take of a window (three rows inserted) cost 4.6-5.2 ms
--    against 0.6 ms without those indexes. Here the three are PL/pgSQL
--    functions (rl_counter_caller_020, _target_020, _definition_020)
--    computing the same thing: the key is unmarked once into a variable
--    and the inner SQL functions take that variable, so they are inlined
--    and their expressions planned once per connection. The bodies of
--    rl_counter_target_007 and rl_counter_definition_007 are repeated
--    with their calls of rl_counter_caller and rl_counter_target (by
--    name, on an already unmarked key, where unmarking again is a no-op)
--    replaced by the _020 functions. The wrappers rl_counter_caller,
--    _target and _definition call them, so every query (the counters API,
--    kind, window, algorithm) reads the parts as before, and the three
--    indexes are rebuilt on them (dropped first and created after, for
--    011's reasons; the same ACCESS EXCLUSIVE pause as 011's rebuild).
--    store's TestCounterKeyPartsAgreeWithGo holds the parts to Go's
--    enforce.ParseCounterKey on every key shape; the indexes keep the
--    default collation they had.
--
-- 2. Pages were packed full (fillfactor 100), so the first update of a
--    counter found no room on its page, was not a HOT update, and inserted
--    into all five indexes (86% HOT under load, 14% not; measured here,
--    the first take of 2,500 counters: 1.28 ms of backend CPU a call at
--    fillfactor 100, 0.43 ms at 70). At 70 a page keeps 30% free, and an
--    update that changes no indexed column (a take changes count only; a
--    token bucket's expires_at only when its TAT passes it) stays on its
--    page. SET (fillfactor) takes a SHARE UPDATE EXCLUSIVE lock (takes and
--    reads go on) and rewrites nothing: new rows (every new window's)
--    follow it, rows already stored move as their windows end and the
--    sweeper removes them. The table is about 40% larger for its rows.
--
-- The counting function (rl_take_012) is unchanged: it already commits
-- without waiting for the WAL flush (synchronous_commit off for its
-- transaction; 008 and docs/design.md state the trade).

alter table rl_counters set (fillfactor = 70);

drop index rl_counters_caller_idx;
drop index rl_counters_target_idx;
drop index rl_counters_definition_idx;

create function rl_counter_caller_020(p_key text) returns text
    language plpgsql immutable parallel safe as
$$
declare
    u text := rl_counter_unmarked(p_key);
begin
    if split_part(u, '|', 1) = 'p' then
        return rl_counter_caller_013(u);
    end if;
    return rl_counter_caller_018(u);
end
$$;

create function rl_counter_target_020(p_key text) returns text
    language plpgsql immutable parallel safe as
$$
declare
    u text := rl_counter_unmarked(p_key);
    k text := split_part(u, '|', 1);
begin
    if k = 'p' then
        return rl_counter_target_013(u);
    end if;
    -- rl_counter_target_007(u)
    return (case k
        when 'ct' then substr(u, length(split_part(u, '|', 2)) + length(rl_counter_caller_020(u)) + 6)
        when 's' then case when starts_with(u, 's|caller_target:') then
            substr(u, length(split_part(u, '|', 2)) + length(rl_counter_caller_020(u)) + 5) end
        when 't' then case
            when starts_with(u, 't|target:server_group:') then
                case when u ~ '^t\|target:server_group:[^|]*:(?:0|[1-9][0-9]{0,8})\|.' then
                    'mcp_server:' || substr(u, length(split_part(u, '|', 2)) + 4) end
            when u ~ '^t\|target:[^:]+:.*:(?:0|[1-9][0-9]{0,8})$' then
                -- <entity>:<name> is the id between target: and its last ':'
                substr(u, 10, length(u) - 9 - strpos(reverse(u), ':'))
        end
    end) collate "C";
end
$$;

create function rl_counter_definition_020(p_key text) returns text
    language plpgsql immutable parallel safe as
$$
declare
    u text := rl_counter_unmarked(p_key);
    k text := split_part(u, '|', 1);
begin
    if k = 'p' then
        return rl_counter_definition_013(u);
    end if;
    -- rl_counter_definition_007(u)
    return (case k
        when 's' then case when rl_counter_caller_020(u) is not null then split_part(u, '|', 2) end
        when 't' then case when rl_counter_target_020(u) is not null then
            case when starts_with(u, 't|target:server_group:') then split_part(u, '|', 2) else substr(u, 3) end
        end
    end) collate "C";
end
$$;

create or replace function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_caller_020(p_key) $$;

create or replace function rl_counter_target(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_target_020(p_key) $$;

create or replace function rl_counter_definition(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_definition_020(p_key) $$;

create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

---- create above / drop below ----

drop index rl_counters_definition_idx;
drop index rl_counters_target_idx;
drop index rl_counters_caller_idx;

-- 018's wrappers (013's for target and definition)
create or replace function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_caller_013(rl_counter_unmarked(p_key))
        else rl_counter_caller_018(rl_counter_unmarked(p_key)) end
$$;

create or replace function rl_counter_target(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_target_013(rl_counter_unmarked(p_key))
        else rl_counter_target_007(rl_counter_unmarked(p_key)) end
$$;

create or replace function rl_counter_definition(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_definition_013(rl_counter_unmarked(p_key))
        else rl_counter_definition_007(rl_counter_unmarked(p_key)) end
$$;

drop function rl_counter_definition_020(text);
drop function rl_counter_target_020(text);
drop function rl_counter_caller_020(text);

create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

alter table rl_counters reset (fillfactor);
