-- Route tiers per team (issue 12, seed 004: each tier checked per IP, per
-- user and per team). A route definition may give each team its own
-- bucket per tier: team_max_requests, with its token bucket's
-- team_burst. A call without a team is not gated by it.
--
-- rl_definitions_route_limits (016) is widened, not rewritten: read as it
-- stands (pg_get_constraintdef) and ORed with a route whose only limit is
-- per team; what was read is kept in rl_018_constraints for the rollback.
--
-- Counter keys: a tier's team bucket counts under
--   ct|<window>|team:<name>|route:<tier>
-- (a team name never holds '|': rl_memberships_team_subject, and the API
-- refuses one). 011's rl_counter_caller_011 knows user:, agent: and ip:
-- callers only, so rl_counter_caller_018 adds this one form and leaves
-- every other key to 011; 013's wrapper rl_counter_caller is replaced to
-- call it (p keys still go to 013). rl_counter_target_007, _definition_007
-- and _kind_007 use only the length of what rl_counter_caller returns, so
-- they follow. The three indexes built on these functions are dropped
-- before the functions change and built again after, as 011 and 013 do
-- (never REINDEX: see 011), so `rlctl counters get --caller team:acme`
-- and `--target route:critical` find these buckets.

alter table rl_definitions
    add column team_max_requests integer,
    add column team_burst        integer,
    add constraint rl_definitions_team_route_fields check (
        (team_max_requests is null and team_burst is null) or (entity_type = 'route' and not exempt)),
    add constraint rl_definitions_team_limits_positive check (
        coalesce(team_max_requests, 1) >= 1 and coalesce(team_burst, 1) >= 1),
    add constraint rl_definitions_team_burst_token_bucket check (
        algorithm = 'token_bucket' or team_burst is null);

create table rl_018_constraints (
    name text primary key,
    def  text not null
);
insert into rl_018_constraints (name, def)
    select conname, pg_get_constraintdef(oid) from pg_constraint
    where conrelid = 'rl_definitions'::regclass and conname = 'rl_definitions_route_limits';

do $$
declare
    lim text := (select def from rl_018_constraints where name = 'rl_definitions_route_limits');
begin
    if lim is null or lim not like 'CHECK %' then
        raise exception 'migration 018: rl_definitions_route_limits is missing or not a CHECK';
    end if;
    execute 'alter table rl_definitions drop constraint rl_definitions_route_limits, '
        || 'add constraint rl_definitions_route_limits check (' || substr(lim, 7)
        || ' or (entity_type = ''route'' and not exempt and team_max_requests is not null))';
end
$$;

drop index rl_counters_caller_idx;
drop index rl_counters_target_idx;
drop index rl_counters_definition_idx;

create function rl_counter_caller_018(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case when p_key ~ '^ct\|[1-9][0-9]{0,8}\|team:[^|]+\|route:.'
        then substring(p_key from '^ct\|[1-9][0-9]{0,8}\|(team:[^|]+)\|')
        else rl_counter_caller_011(p_key) end) collate "C"
$$;

create or replace function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_caller_013(rl_counter_unmarked(p_key))
        else rl_counter_caller_018(rl_counter_unmarked(p_key)) end
$$;

create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

---- create above / drop below ----

drop index rl_counters_definition_idx;
drop index rl_counters_target_idx;
drop index rl_counters_caller_idx;

create or replace function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_caller_013(rl_counter_unmarked(p_key))
        else rl_counter_caller_011(rl_counter_unmarked(p_key)) end
$$;
drop function rl_counter_caller_018(text);

create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

-- Routes whose only limit is per team cannot stand under 016's constraint.
delete from rl_definitions where entity_type = 'route' and not exempt
    and coalesce(max_requests, ip_max_requests, user_max_requests, agent_max_requests) is null;

do $$
declare
    r record;
begin
    for r in select name, def from rl_018_constraints loop
        execute format('alter table rl_definitions drop constraint %I, add constraint %I %s', r.name, r.name, r.def);
    end loop;
end
$$;
drop table rl_018_constraints;

alter table rl_definitions
    drop constraint rl_definitions_team_burst_token_bucket,
    drop constraint rl_definitions_team_limits_positive,
    drop constraint rl_definitions_team_route_fields,
    drop column team_burst,
    drop column team_max_requests;
