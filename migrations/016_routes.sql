-- Routes and tiers: a target definition of entity_type route names a tier
-- of HTTP routes (paths, optionally methods) and limits it per caller
-- dimension: max_requests (one bucket all callers share), ip_max_requests,
-- user_max_requests and agent_max_requests (a bucket per client address,
-- user or agent), each with its token bucket's burst. An exempt route has
-- no limits: its paths are never limited.
--
-- Tools and skills: a target mcp_tool or a2a_skill definition may name the
-- kinds of calls it covers (tool, prompt, resource, completion; none: all)
-- and its tool_scope (null: global, one bucket for the definition; tool,
-- principal, principal_tool), and its name may be a glob.
--
-- Three constraints are widened, not rewritten, as 015 widens its own:
-- each is read as it stands (pg_get_constraintdef) and gains the route's
-- case with OR, so 015's descriptor cases (and any other migration's)
-- stay. What was read is kept in rl_016_constraints for the rollback.

alter table rl_definitions
    add column methods         text[],
    add column paths           text[],
    add column exempt          boolean not null default false,
    add column ip_max_requests integer,
    add column ip_burst        integer,
    add column kinds           text[],
    add column tool_scope      text,
    add constraint rl_definitions_tool_fields check (
        ((kinds is null and tool_scope is null) or entity_type in ('mcp_tool', 'a2a_skill')) and
        (kinds is null or kinds <@ array['tool', 'prompt', 'resource', 'completion']) and
        (tool_scope is null or tool_scope in ('tool', 'principal', 'principal_tool'))),
    add constraint rl_definitions_route_fields check (
        (entity_type = 'route') = (paths is not null) and
        (paths is null or cardinality(paths) between 1 and 100) and
        (methods is null or entity_type = 'route') and
        (not exempt or entity_type = 'route') and
        ((ip_max_requests is null and ip_burst is null) or entity_type = 'route')),
    add constraint rl_definitions_route_limits check (
        entity_type <> 'route' or
        (exempt and max_requests is null and ip_max_requests is null and user_max_requests is null and agent_max_requests is null) or
        (not exempt and coalesce(max_requests, ip_max_requests, user_max_requests, agent_max_requests) is not null)),
    add constraint rl_definitions_ip_limits_positive check (
        coalesce(ip_max_requests, 1) >= 1 and coalesce(ip_burst, 1) >= 1),
    add constraint rl_definitions_ip_burst_token_bucket check (
        algorithm = 'token_bucket' or ip_burst is null);

create table rl_016_constraints (
    name text primary key,
    def  text not null
);
insert into rl_016_constraints (name, def)
    select conname, pg_get_constraintdef(oid) from pg_constraint
    where conrelid = 'rl_definitions'::regclass
        and conname in ('rl_definitions_entity_type', 'rl_definitions_target_limits', 'rl_definitions_burst_axes');

do $$
declare
    ent text := (select def from rl_016_constraints where name = 'rl_definitions_entity_type');
    lim text := (select def from rl_016_constraints where name = 'rl_definitions_target_limits');
    bur text := (select def from rl_016_constraints where name = 'rl_definitions_burst_axes');
begin
    if ent is null or lim is null or bur is null or ent not like 'CHECK %' or lim not like 'CHECK %' or bur not like 'CHECK %' then
        raise exception 'migration 016: rl_definitions_entity_type, _target_limits or _burst_axes is missing or not a CHECK';
    end if;
    -- A route is a target definition; its limits are per dimension
    -- (rl_definitions_route_limits says which), bursts beside each.
    execute 'alter table rl_definitions drop constraint rl_definitions_entity_type, '
        || 'add constraint rl_definitions_entity_type check (' || substr(ent, 7)
        || ' or (axis = ''target'' and entity_type = ''route''))';
    execute 'alter table rl_definitions drop constraint rl_definitions_target_limits, '
        || 'add constraint rl_definitions_target_limits check (' || substr(lim, 7)
        || ' or (axis = ''target'' and entity_type = ''route''))';
    execute 'alter table rl_definitions drop constraint rl_definitions_burst_axes, '
        || 'add constraint rl_definitions_burst_axes check (' || substr(bur, 7)
        || ' or (axis = ''target'' and entity_type = ''route''))';
end
$$;

---- create above / drop below ----

delete from rl_definitions where entity_type = 'route';

do $$
declare
    r record;
begin
    for r in select name, def from rl_016_constraints loop
        execute format('alter table rl_definitions drop constraint %I, add constraint %I %s', r.name, r.name, r.def);
    end loop;
end
$$;
drop table rl_016_constraints;

alter table rl_definitions
    drop constraint rl_definitions_tool_fields,
    drop constraint rl_definitions_ip_burst_token_bucket,
    drop constraint rl_definitions_ip_limits_positive,
    drop constraint rl_definitions_route_limits,
    drop constraint rl_definitions_route_fields,
    drop column tool_scope,
    drop column kinds,
    drop column ip_burst,
    drop column ip_max_requests,
    drop column exempt,
    drop column paths,
    drop column methods;
