-- Counters selectable by caller, target and definition through indexes
-- (docs/design.md, "Counter keys").
--
-- rl_counter_caller, _target, _definition, _kind and _window read a stored
-- counter key's parts: the SQL twin of enforce.ParseCounterKey
-- (pkg/enforce/key.go), run on the text store.CounterKeyText stored. That
-- escaping changes only bytes no separator is made of, so the parts they
-- find are the escaped parts Go finds (internal/store's
-- TestCounterKeyPartsAgreeWithGo holds them to it). A string that is not a
-- counter key has no parts (null).
--
-- Three expression indexes serve `rlctl counters get/reset`: by caller, by
-- target and by definition. Expression indexes rather than stored
-- generated columns: adding a column rewrites rl_counters under an
-- exclusive lock, and PostgreSQL 15 recomputes stored generated columns on
-- every UPDATE, which is what rl_take does to a counter on every decision;
-- an index expression is computed when a row is inserted (once per counter
-- and window) and never on rl_take's count updates, which stay HOT (no
-- indexed value changes). rl_take itself is unchanged: it still passes only
-- the key.
--
-- Building the indexes holds a SHARE lock on rl_counters: decisions wait
-- for the build (docs/operations.md, "Upgrading: counters selected through
-- indexes").

-- The functions are plain SQL expressions, which PostgreSQL inlines into
-- the index definitions and the queries alike (no function call per row).
-- Regular expressions only validate (a match without capture groups is
-- cheap; one with them costs microseconds); parts are cut with strpos and
-- substr. The parts the indexes hold are in the "C" collation, so index
-- entries compare as bytes whatever the database's collation. A caller
-- and target without a target type mark between them (a target type
-- gateways do not send) fall back to a capturing expression.
--
-- The grammar (enforce.CounterKey), W a window (1 to 9 digits, no leading
-- zero), D a definition id's window (0 too, as ratelimit.ParseDefinitionID
-- accepts), C a caller (user:<name> or agent:<client id>, name not empty):
--
--   c|W|C                                     caller bucket
--   ct|W|C|<target>                           caller_target bucket
--   s|caller:group:<name>:D|C                 shadow caller definition
--   s|caller_target:group:<name>:D|C|<target> shadow caller_target definition
--   t|target:<entity>:<name>:D                target definition (name may hold '|')
--   t|target:server_group:<name>:D|<server>   server_group definition, per member
--
-- <caller>|<target> splits at the first |mcp_server: or |a2a_agent: after
-- the caller name's first character, else at the last '|' followed by
-- <type>: (the greedy capture in the fallback finds the last).

-- rl_counter_caller: user:<name> or agent:<client id>, for c, ct and s keys.
-- For ct and caller_target s keys the caller, starting after the window or
-- definition id (length(split_part(p_key, '|', 2)) + 5 or + 4) with a
-- prefix of 5 (user:) or 6 (agent:) characters, ends before the first
-- target type mark found from its name's second character.
create function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case split_part(p_key, '|', 1)
        when 'c' then case when p_key ~ '^c\|[1-9][0-9]{0,8}\|(?:user|agent):.' then substr(p_key, length(split_part(p_key, '|', 2)) + 4) end
        when 'ct' then case when p_key ~ '^ct\|[1-9][0-9]{0,8}\|(?:user|agent):.' then coalesce(
            substr(p_key, length(split_part(p_key, '|', 2)) + 5,
                (case when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 5) = 'user:' then 5 else 6 end)
                + least(
                    nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 5 + 1
                        + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 5) = 'user:' then 5 else 6 end)), '|mcp_server:'), 0),
                    nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 5 + 1
                        + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 5) = 'user:' then 5 else 6 end)), '|a2a_agent:'), 0))),
            substring(p_key from '^ct\|[1-9][0-9]{0,8}\|((?:user|agent):.+)\|[^|:]+:')) end
        when 's' then case
            when p_key ~ '^s\|caller:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|(?:user|agent):.' then substr(p_key, length(split_part(p_key, '|', 2)) + 4)
            when p_key ~ '^s\|caller_target:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|(?:user|agent):.' then coalesce(
                substr(p_key, length(split_part(p_key, '|', 2)) + 4,
                    (case when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 5) = 'user:' then 5 else 6 end)
                    + least(
                        nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 4 + 1
                            + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 5) = 'user:' then 5 else 6 end)), '|mcp_server:'), 0),
                        nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 4 + 1
                            + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 5) = 'user:' then 5 else 6 end)), '|a2a_agent:'), 0))),
                substring(p_key from '^s\|caller_target:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|((?:user|agent):.+)\|[^|:]+:'))
        end
    end) collate "C"
$$;

-- rl_counter_target: what the counter counts calls to, <type>:<name>: a
-- caller_target bucket's (or shadow counter's) target, a target
-- definition's entity, a server_group member as mcp_server:<server>.
create function rl_counter_target(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case split_part(p_key, '|', 1)
        when 'ct' then substr(p_key, length(split_part(p_key, '|', 2)) + length(rl_counter_caller(p_key)) + 6)
        when 's' then case when starts_with(p_key, 's|caller_target:') then
            substr(p_key, length(split_part(p_key, '|', 2)) + length(rl_counter_caller(p_key)) + 5) end
        when 't' then case
            when starts_with(p_key, 't|target:server_group:') then
                case when p_key ~ '^t\|target:server_group:[^|]*:(?:0|[1-9][0-9]{0,8})\|.' then
                    'mcp_server:' || substr(p_key, length(split_part(p_key, '|', 2)) + 4) end
            when p_key ~ '^t\|target:[^:]+:.*:(?:0|[1-9][0-9]{0,8})$' then
                -- <entity>:<name> is the id between target: and its last ':'
                substr(p_key, 10, length(p_key) - 9 - strpos(reverse(p_key), ':'))
        end
    end) collate "C"
$$;

-- rl_counter_definition: the definition id of s and t keys.
create function rl_counter_definition(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case split_part(p_key, '|', 1)
        when 's' then case when rl_counter_caller(p_key) is not null then split_part(p_key, '|', 2) end
        when 't' then case when rl_counter_target(p_key) is not null then
            case when starts_with(p_key, 't|target:server_group:') then split_part(p_key, '|', 2) else substr(p_key, 3) end
        end
    end) collate "C"
$$;

-- rl_counter_kind: c, ct, s or t; null for a string that is not a key.
create function rl_counter_kind(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when coalesce(rl_counter_caller(p_key), rl_counter_target(p_key)) is not null then split_part(p_key, '|', 1) end
$$;

-- rl_counter_window: the window, in the key (c, ct) or its definition id's
-- (s, t).
create function rl_counter_window(p_key text) returns integer
    language sql immutable parallel safe as
$$
    select case rl_counter_kind(p_key)
        when 'c' then split_part(p_key, '|', 2)::integer
        when 'ct' then split_part(p_key, '|', 2)::integer
        else reverse(split_part(reverse(rl_counter_definition(p_key)), ':', 1))::integer
    end
$$;

create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

---- create above / drop below ----

drop index rl_counters_definition_idx;
drop index rl_counters_target_idx;
drop index rl_counters_caller_idx;
drop function rl_counter_window(text);
drop function rl_counter_kind(text);
drop function rl_counter_definition(text);
drop function rl_counter_target(text);
drop function rl_counter_caller(text);
