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
    drop constraint rl_definitions_entity_type,
    add constraint rl_definitions_entity_type check (
        (axis in ('caller', 'caller_target', 'quarantine') and entity_type = 'group') or
        (axis = 'target' and entity_type in ('mcp_server', 'a2a_agent', 'mcp_tool', 'a2a_skill', 'server_group', 'route'))),
    drop constraint rl_definitions_target_limits,
    add constraint rl_definitions_target_limits check (
        axis <> 'target' or entity_type = 'route' or
        (max_requests is not null and user_max_requests is null and agent_max_requests is null)),
    drop constraint rl_definitions_burst_axes,
    add constraint rl_definitions_burst_axes check (
        (burst is null or axis = 'target') and
        ((user_burst is null and agent_burst is null) or axis in ('caller', 'caller_target') or entity_type = 'route')),
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

---- create above / drop below ----

delete from rl_definitions where entity_type = 'route';

alter table rl_definitions
    drop constraint rl_definitions_tool_fields,
    drop constraint rl_definitions_ip_burst_token_bucket,
    drop constraint rl_definitions_ip_limits_positive,
    drop constraint rl_definitions_route_limits,
    drop constraint rl_definitions_route_fields,
    drop constraint rl_definitions_burst_axes,
    add constraint rl_definitions_burst_axes check (
        (burst is null or axis = 'target') and
        ((user_burst is null and agent_burst is null) or axis in ('caller', 'caller_target'))),
    drop constraint rl_definitions_target_limits,
    add constraint rl_definitions_target_limits check (
        axis <> 'target' or
        (max_requests is not null and user_max_requests is null and agent_max_requests is null)),
    drop constraint rl_definitions_entity_type,
    add constraint rl_definitions_entity_type check (
        (axis in ('caller', 'caller_target', 'quarantine') and entity_type = 'group') or
        (axis = 'target' and entity_type in ('mcp_server', 'a2a_agent', 'mcp_tool', 'a2a_skill', 'server_group'))),
    drop column tool_scope,
    drop column kinds,
    drop column ip_burst,
    drop column ip_max_requests,
    drop column exempt,
    drop column paths,
    drop column methods;
