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

-- One function, without calls to others (each call from PL/pgSQL costs
-- about a microsecond): it runs for every index on every counter inserted.
--
-- A definition id splits as ratelimit.ParseDefinitionID does:
-- <axis>:<entity type>:<name>:<window>, the name everything between the
-- second ':' and the last. <caller>|<target> splits as enforce.CounterKey
-- documents: the target begins at the first |mcp_server: or |a2a_agent:
-- after the caller name's first character, else at the last '|' followed
-- by <type>:.
create function rl_counter_key_parts(p_key text) returns rl_counter_key_parts
    language plpgsql immutable strict parallel safe as
$$
declare
    r        rl_counter_key_parts;
    v_rest   text;
    v_head   text;
    v_id     text;    -- the definition id (s, t)
    v_callee text;    -- <caller> or <caller>|<target> (c, ct, s)
    v_split  boolean; -- v_callee holds a target
    v_server text;
    v_axis   text;
    v_entity text;
    v_window text;
    v_p      integer;
    v_at     integer;
    v_i      integer;
begin
    if strpos(p_key, '|') = 0 then
        return null;
    end if;
    r.kind := split_part(p_key, '|', 1);
    v_rest := substr(p_key, length(r.kind) + 2);
    if r.kind = 'c' or r.kind = 'ct' then
        v_head := split_part(v_rest, '|', 1);
        if strpos(v_rest, '|') = 0 or v_head !~ '^[1-9][0-9]{0,8}$' then
            return null;
        end if;
        r.window_seconds := v_head::integer;
        v_callee := substr(v_rest, length(v_head) + 2);
        v_split := r.kind = 'ct';
    elsif r.kind = 's' then
        if strpos(v_rest, '|') = 0 then
            return null;
        end if;
        v_id := split_part(v_rest, '|', 1);
        v_callee := substr(v_rest, length(v_id) + 2);
    elsif r.kind = 't' then
        -- A target definition id may hold '|'; a server_group's is
        -- followed by |<server> (group names never hold '|').
        v_id := v_rest;
        if starts_with(v_rest, 'target:server_group:') then
            v_id := split_part(v_rest, '|', 1);
            v_server := substr(v_rest, length(v_id) + 2);
            if v_server = '' then
                return null;
            end if;
        end if;
    else
        return null;
    end if;

    if v_id is not null then
        v_axis := split_part(v_id, ':', 1);
        if strpos(v_id, ':') = 0 or v_axis = '' then
            return null;
        end if;
        v_rest := substr(v_id, length(v_axis) + 2);
        v_entity := split_part(v_rest, ':', 1);
        if strpos(v_rest, ':') = 0 or v_entity = '' then
            return null;
        end if;
        v_rest := substr(v_rest, length(v_entity) + 2); -- <name>:<window>
        if strpos(v_rest, ':') = 0 then
            return null;
        end if;
        v_window := reverse(split_part(reverse(v_rest), ':', 1));
        if v_window !~ '^(0|[1-9][0-9]{0,8})$' then
            return null;
        end if;
        if r.kind = 's' then
            if v_axis not in ('caller', 'caller_target') or v_entity <> 'group' then
                return null;
            end if;
            v_split := v_axis = 'caller_target';
        else
            if v_axis <> 'target' then
                return null;
            end if;
            r.target := case when v_server is null
                then v_entity || ':' || left(v_rest, length(v_rest) - length(v_window) - 1)
                else 'mcp_server:' || v_server end;
        end if;
        r.definition_id := v_id;
        r.window_seconds := v_window::integer;
    end if;

    if v_callee is not null then
        v_p := case
            when starts_with(v_callee, 'user:') and length(v_callee) > 5 then 5
            when starts_with(v_callee, 'agent:') and length(v_callee) > 6 then 6
            else 0 end;
        if v_p = 0 then
            return null;
        end if;
        if not v_split then
            r.caller := v_callee;
            return r;
        end if;
        -- Search from the caller name's second character.
        v_rest := substr(v_callee, v_p + 2);
        v_at := least(nullif(strpos(v_rest, '|mcp_server:'), 0), nullif(strpos(v_rest, '|a2a_agent:'), 0));
        if v_at is not null then
            v_at := v_at + v_p + 1;
        else
            -- A target type gateways do not send: the last '|' followed
            -- by <type>:.
            v_i := length(v_callee);
            while v_at is null and v_i >= v_p + 2 loop
                if substr(v_callee, v_i, 1) = '|' then
                    v_rest := substr(v_callee, v_i + 1);
                    v_head := split_part(v_rest, ':', 1);
                    if strpos(v_rest, ':') > 0 and v_head <> '' and strpos(v_head, '|') = 0 then
                        v_at := v_i;
                    end if;
                end if;
                v_i := v_i - 1;
            end loop;
        end if;
        if v_at is null then
            return null;
        end if;
        r.target := substr(v_callee, v_at + 1);
        if strpos(r.target, ':') = 0 or split_part(r.target, ':', 1) = '' then
            return null;
        end if;
        r.caller := left(v_callee, v_at - 1);
    end if;
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
drop type rl_counter_key_parts;
