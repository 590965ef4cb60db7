-- Counters of every algorithm are selectable (issue 11).
--
-- Counters of the token bucket and the sliding window mark their key's kind
-- (c.tb, ct.sw, s.tb, t.sw, ...: enforce.CounterKey.Algorithm), so that a
-- definition whose algorithm changes starts on a fresh counter. 007's
-- functions read only unmarked kinds, so those counters were found by no
-- selector. This migration keeps 007's functions as they are (renamed with
-- a _007 suffix), puts a function that removes the mark in front of each,
-- adds rl_counter_algorithm, and builds the three indexes again on the new
-- functions: an index on an immutable function must never see that
-- function change under it, so it is rebuilt rather than left to hold the
-- old answers.
--
-- Building the indexes holds a SHARE lock on rl_counters while they build
-- (about 2 s per 200,000 live counters on a 2-core machine, as 007):
-- decisions wait meanwhile (docs/operations.md).

alter function rl_counter_caller(text) rename to rl_counter_caller_007;
alter function rl_counter_target(text) rename to rl_counter_target_007;
alter function rl_counter_definition(text) rename to rl_counter_definition_007;
alter function rl_counter_kind(text) rename to rl_counter_kind_007;
alter function rl_counter_window(text) rename to rl_counter_window_007;

-- rl_counter_unmarked is the key with its kind's algorithm mark removed
-- (t.tb|... -> t|...); a key with no mark, or an unknown one, is returned
-- as it is (and an unknown one then parses as nothing, as
-- enforce.ParseCounterKey refuses it).
create function rl_counter_unmarked(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case split_part(p_key, '|', 1)
        when 'c.tb' then 'c' || substr(p_key, 5)
        when 'c.sw' then 'c' || substr(p_key, 5)
        when 't.tb' then 't' || substr(p_key, 5)
        when 't.sw' then 't' || substr(p_key, 5)
        when 's.tb' then 's' || substr(p_key, 5)
        when 's.sw' then 's' || substr(p_key, 5)
        when 'ct.tb' then 'ct' || substr(p_key, 6)
        when 'ct.sw' then 'ct' || substr(p_key, 6)
        else p_key
    end
$$;

create function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_caller_007(rl_counter_unmarked(p_key)) $$;

create function rl_counter_target(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_target_007(rl_counter_unmarked(p_key)) $$;

create function rl_counter_definition(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_definition_007(rl_counter_unmarked(p_key)) $$;

create function rl_counter_kind(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_kind_007(rl_counter_unmarked(p_key)) $$;

create function rl_counter_window(p_key text) returns integer
    language sql immutable parallel safe as
$$ select rl_counter_window_007(rl_counter_unmarked(p_key)) $$;

-- rl_counter_algorithm is the algorithm a counter counts by, for a key
-- that parses (null otherwise).
create function rl_counter_algorithm(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when rl_counter_kind(p_key) is null then null
        else case split_part(split_part(p_key, '|', 1), '.', 2)
            when 'tb' then 'token_bucket'
            when 'sw' then 'sliding_window'
            else 'fixed_window'
        end
    end
$$;

drop index rl_counters_caller_idx;
drop index rl_counters_target_idx;
drop index rl_counters_definition_idx;
create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

---- create above / drop below ----

drop index rl_counters_definition_idx;
drop index rl_counters_target_idx;
drop index rl_counters_caller_idx;
drop function rl_counter_algorithm(text);
drop function rl_counter_window(text);
drop function rl_counter_kind(text);
drop function rl_counter_definition(text);
drop function rl_counter_target(text);
drop function rl_counter_caller(text);
drop function rl_counter_unmarked(text);
alter function rl_counter_caller_007(text) rename to rl_counter_caller;
alter function rl_counter_target_007(text) rename to rl_counter_target;
alter function rl_counter_definition_007(text) rename to rl_counter_definition;
alter function rl_counter_kind_007(text) rename to rl_counter_kind;
alter function rl_counter_window_007(text) rename to rl_counter_window;
create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));
