-- Counters selectable by caller, target and definition through indexes
-- (docs/design.md, "Counter keys").
--
-- rl_counter_key_parts reads a stored counter key into its parts: the SQL
-- twin of enforce.ParseCounterKey (pkg/enforce/key.go), run on the text
-- store.CounterKeyText stored. That escaping changes only bytes no
-- separator is made of, so the parts it finds are the escaped parts Go
-- finds (internal/store's TestCounterKeyPartsAgreeWithGo holds them to
-- it). A string that is not a counter key has no parts (null).
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

create type rl_counter_key_parts as (
    kind           text,    -- c, ct, s or t
    window_seconds integer, -- in the key (c, ct) or the definition id's (s, t)
    definition_id  text,    -- s, t
    caller         text,    -- c, ct, s: user:<name> or agent:<client id>
    target         text     -- ct, caller_target s: <type>:<name>; t: what it limits
);

-- The parts of a definition id, as ratelimit.ParseDefinitionID splits it:
-- {axis, entity type, name, window}; null if it is not one.
create function rl_counter_definition_parts(p_id text) returns text[]
    language plpgsql immutable strict parallel safe as
$$
declare
    v_axis   text := split_part(p_id, ':', 1);
    v_rest   text;
    v_entity text;
    v_window text;
begin
    if strpos(p_id, ':') = 0 or v_axis = '' then
        return null;
    end if;
    v_rest := substr(p_id, length(v_axis) + 2);
    v_entity := split_part(v_rest, ':', 1);
    if strpos(v_rest, ':') = 0 or v_entity = '' then
        return null;
    end if;
    v_rest := substr(v_rest, length(v_entity) + 2);
    if strpos(v_rest, ':') = 0 then
        return null;
    end if;
    v_window := reverse(split_part(reverse(v_rest), ':', 1));
    if v_window !~ '^(0|[1-9][0-9]{0,8})$' then
        return null;
    end if;
    return array[v_axis, v_entity, left(v_rest, length(v_rest) - length(v_window) - 1), v_window];
end
$$;

-- The length of a caller's type prefix (user: or agent:) when a name of at
-- least one character follows it, else 0.
create function rl_counter_caller_prefix(p_s text) returns integer
    language sql immutable strict parallel safe as
$$
    select case
        when starts_with(p_s, 'user:') and length(p_s) > 5 then 5
        when starts_with(p_s, 'agent:') and length(p_s) > 6 then 6
        else 0
    end
$$;

-- <caller>|<target> split as enforce.CounterKey documents: the target
-- begins at the first |mcp_server: or |a2a_agent: after the caller name's
-- first character, else after the last '|'. {caller, target}, or null.
create function rl_counter_split_caller(p_s text) returns text[]
    language plpgsql immutable strict parallel safe as
$$
declare
    v_p      integer := rl_counter_caller_prefix(p_s);
    v_from   integer;
    v_search text;
    v_at     integer;
    v_last   integer;
    v_target text;
begin
    if v_p = 0 then
        return null;
    end if;
    v_from := v_p + 2; -- the name's second character
    v_search := substr(p_s, v_from);
    v_at := least(nullif(strpos(v_search, '|mcp_server:'), 0), nullif(strpos(v_search, '|a2a_agent:'), 0));
    if v_at is not null then
        v_at := v_at + v_from - 1;
    else
        v_last := strpos(reverse(p_s), '|');
        if v_last > 0 and length(p_s) - v_last + 1 >= v_from then
            v_at := length(p_s) - v_last + 1;
        end if;
    end if;
    if v_at is null then
        return null;
    end if;
    v_target := substr(p_s, v_at + 1);
    if strpos(v_target, ':') = 0 or split_part(v_target, ':', 1) = '' then
        return null;
    end if;
    return array[left(p_s, v_at - 1), v_target];
end
$$;

create function rl_counter_key_parts(p_key text) returns rl_counter_key_parts
    language plpgsql immutable strict parallel safe as
$$
declare
    r        rl_counter_key_parts;
    v_rest   text;
    v_head   text;
    v_def    text[];
    v_server text;
    v_pair   text[];
begin
    if strpos(p_key, '|') = 0 then
        return null;
    end if;
    r.kind := split_part(p_key, '|', 1);
    v_rest := substr(p_key, length(r.kind) + 2);
    if r.kind in ('c', 'ct') then
        v_head := split_part(v_rest, '|', 1);
        if strpos(v_rest, '|') = 0 or v_head !~ '^[1-9][0-9]{0,8}$' then
            return null;
        end if;
        r.window_seconds := v_head::integer;
        v_rest := substr(v_rest, length(v_head) + 2);
        if r.kind = 'c' then
            if rl_counter_caller_prefix(v_rest) = 0 then
                return null;
            end if;
            r.caller := v_rest;
            return r;
        end if;
        v_pair := rl_counter_split_caller(v_rest);
    elsif r.kind = 's' then
        v_head := split_part(v_rest, '|', 1);
        v_def := rl_counter_definition_parts(v_head);
        if strpos(v_rest, '|') = 0 or v_def is null or v_def[1] not in ('caller', 'caller_target') or v_def[2] <> 'group' then
            return null;
        end if;
        r.definition_id := v_head;
        r.window_seconds := v_def[4]::integer;
        v_rest := substr(v_rest, length(v_head) + 2);
        if v_def[1] = 'caller' then
            if rl_counter_caller_prefix(v_rest) = 0 then
                return null;
            end if;
            r.caller := v_rest;
            return r;
        end if;
        v_pair := rl_counter_split_caller(v_rest);
    elsif r.kind = 't' then
        -- A target definition id may hold '|'; a server_group's is
        -- followed by |<server> (group names never hold '|').
        v_head := v_rest;
        if starts_with(v_rest, 'target:server_group:') then
            v_head := split_part(v_rest, '|', 1);
            v_server := substr(v_rest, length(v_head) + 2);
            if strpos(v_rest, '|') = 0 or v_server = '' then
                return null;
            end if;
        end if;
        v_def := rl_counter_definition_parts(v_head);
        if v_def is null or v_def[1] <> 'target' then
            return null;
        end if;
        r.definition_id := v_head;
        r.window_seconds := v_def[4]::integer;
        r.target := case when v_server is null then v_def[2] || ':' || v_def[3] else 'mcp_server:' || v_server end;
        return r;
    else
        return null;
    end if;
    if v_pair is null then
        return null;
    end if;
    r.caller := v_pair[1];
    r.target := v_pair[2];
    return r;
end
$$;

create index rl_counters_caller_idx on rl_counters (((rl_counter_key_parts(key)).caller));
create index rl_counters_target_idx on rl_counters (((rl_counter_key_parts(key)).target));
create index rl_counters_definition_idx on rl_counters (((rl_counter_key_parts(key)).definition_id));

---- create above / drop below ----

drop index rl_counters_definition_idx;
drop index rl_counters_target_idx;
drop index rl_counters_caller_idx;
drop function rl_counter_key_parts(text);
drop function rl_counter_split_caller(text);
drop function rl_counter_caller_prefix(text);
drop function rl_counter_definition_parts(text);
drop type rl_counter_key_parts;
