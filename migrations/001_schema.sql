-- The management schema: limit definitions, memberships (groups and
-- quarantine), administrators, API tokens and the audit log.
--
-- CHECK constraints repeat the rules of internal/validate that SQL can express,
-- so a bug in the application, or a hand-written UPDATE, cannot store a
-- definition the enforcement path would misread.

create table rl_definitions (
    id                 text        primary key,
    axis               text        not null,
    entity_type        text        not null,
    name               text        not null,
    window_seconds     integer     not null,
    max_requests       integer,
    user_max_requests  integer,
    agent_max_requests integer,
    members            text[],
    fail_closed        boolean     not null default false,
    enabled            boolean     not null default true,
    mode               text        not null default 'enforce',
    description        text        not null default '',
    created_at         timestamptz not null default now(),
    updated_at         timestamptz not null default now(),
    updated_by         text        not null default '',
    version            bigint      not null default 1,

    constraint rl_definitions_id_format
        check (id = axis || ':' || entity_type || ':' || name || ':' || window_seconds),
    constraint rl_definitions_axis
        check (axis in ('caller', 'target', 'caller_target', 'quarantine')),
    constraint rl_definitions_entity_type check (
        (axis in ('caller', 'caller_target', 'quarantine') and entity_type = 'group') or
        (axis = 'target' and entity_type in ('mcp_server', 'a2a_agent', 'mcp_tool', 'a2a_skill', 'server_group'))),
    constraint rl_definitions_name
        check (length(name) between 1 and 600 and name = btrim(name)),
    constraint rl_definitions_window
        check (window_seconds between 1 and 86400),
    constraint rl_definitions_limits_positive check (
        coalesce(max_requests, 1) >= 1 and
        coalesce(user_max_requests, 1) >= 1 and
        coalesce(agent_max_requests, 1) >= 1),
    constraint rl_definitions_group_limits check (
        axis not in ('caller', 'caller_target') or
        (max_requests is null and (user_max_requests is not null or agent_max_requests is not null))),
    constraint rl_definitions_target_limits check (
        axis <> 'target' or
        (max_requests is not null and user_max_requests is null and agent_max_requests is null)),
    constraint rl_definitions_quarantine check (
        axis <> 'quarantine' or
        (name in ('quarantine-callers', 'quarantine-targets') and window_seconds = 1 and
         max_requests is null and user_max_requests is null and agent_max_requests is null)),
    constraint rl_definitions_reserved_names check (
        axis = 'quarantine' or name not in ('quarantine-callers', 'quarantine-targets')),
    constraint rl_definitions_members check (
        (entity_type = 'server_group') = (members is not null) and
        (members is null or cardinality(members) >= 1)),
    constraint rl_definitions_mode check (mode in ('enforce', 'shadow')),
    constraint rl_definitions_version check (version >= 1)
);

-- Lookups by entity ("which definitions apply to server x") and by member
-- ("which server groups name server x").
create index rl_definitions_entity_idx on rl_definitions (axis, entity_type, name);
create index rl_definitions_members_idx on rl_definitions using gin (members);

create table rl_memberships (
    subject_type          text        not null,
    subject               text        not null,
    groups                text[]      not null,
    quarantine_reason     text        not null default '',
    quarantined_at        timestamptz,
    quarantine_expires_at timestamptz,
    version               bigint      not null default 1,
    created_at            timestamptz not null default now(),
    updated_at            timestamptz not null default now(),
    primary key (subject_type, subject),

    constraint rl_memberships_subject_type
        check (subject_type in ('user', 'client', 'server', 'agent')),
    constraint rl_memberships_subject
        check (length(subject) between 1 and 256 and subject = btrim(subject)),
    constraint rl_memberships_groups
        check (cardinality(groups) >= 1 and array_position(groups, null) is null),
    -- Targets may only be quarantined; callers may not join the target kill switch.
    constraint rl_memberships_target_groups check (
        (subject_type in ('server', 'agent') and groups = array['quarantine-targets']) or
        (subject_type in ('user', 'client') and not ('quarantine-targets' = any (groups)))),
    constraint rl_memberships_version check (version >= 1)
);

-- "Who is in group g": the API's group filter and the quarantine lists.
create index rl_memberships_groups_idx on rl_memberships using gin (groups);

create table rl_admins (
    subject_type text        not null,
    subject      text        not null,
    note         text        not null default '',
    created_at   timestamptz not null default now(),
    created_by   text        not null default '',
    primary key (subject_type, subject),
    constraint rl_admins_subject_type check (subject_type in ('user', 'client')),
    constraint rl_admins_subject check (length(subject) between 1 and 256 and subject = btrim(subject))
);

create table rl_api_tokens (
    name         text        primary key,
    role         text        not null,
    token_sha256 bytea       not null unique,
    created_at   timestamptz not null default now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    constraint rl_api_tokens_role check (role in ('admin', 'viewer', 'enforcer')),
    constraint rl_api_tokens_hash check (length(token_sha256) = 32),
    constraint rl_api_tokens_name check (length(name) between 1 and 64)
);

create table rl_audit_log (
    id            bigint generated always as identity primary key,
    at            timestamptz not null default now(),
    actor         text        not null,
    action        text        not null,
    resource_type text        not null,
    resource_id   text        not null,
    before        jsonb,
    after         jsonb,
    request_id    text        not null default ''
);

create index rl_audit_log_at_idx on rl_audit_log (at);
create index rl_audit_log_resource_idx on rl_audit_log (resource_type, resource_id);
create index rl_audit_log_actor_idx on rl_audit_log (actor);

-- The two quarantine kill switches exist from the start, enabled, so an
-- operator never has to create anything to quarantine a subject.
insert into rl_definitions (id, axis, entity_type, name, window_seconds, description, updated_by)
values ('quarantine:group:quarantine-callers:1', 'quarantine', 'group', 'quarantine-callers', 1,
        'kill switch: members of quarantine-callers are denied; disable to turn caller quarantine off', 'migration'),
       ('quarantine:group:quarantine-targets:1', 'quarantine', 'group', 'quarantine-targets', 1,
        'kill switch: members of quarantine-targets are denied; disable to turn target quarantine off', 'migration');

-- Readers (the enforcement package) LISTEN on rlctl_changes and drop their
-- caches when it fires. The notification is per statement with only the table
-- name: PostgreSQL folds identical payloads within a transaction, so applying
-- 100,000 memberships sends one notification, not 100,000, and a reader
-- reloads what changed rather than trusting a payload.
create function rl_notify_change() returns trigger
    language plpgsql as
$$
begin
    perform pg_notify('rlctl_changes', tg_table_name);
    return null;
end
$$;

create trigger rl_definitions_notify after insert or update or delete or truncate on rl_definitions
    for each statement execute function rl_notify_change();
create trigger rl_memberships_notify after insert or update or delete or truncate on rl_memberships
    for each statement execute function rl_notify_change();
create trigger rl_admins_notify after insert or update or delete or truncate on rl_admins
    for each statement execute function rl_notify_change();

-- The sentinels can be switched off but never removed: without them an
-- operator would have no quarantine to reach for.
create function rl_protect_sentinels() returns trigger
    language plpgsql as
$$
begin
    raise exception 'quarantine sentinel % cannot be deleted; disable it to turn quarantine off', old.id
        using errcode = 'check_violation', constraint = 'rl_definitions_sentinel';
end
$$;

create trigger rl_definitions_protect_sentinels before delete on rl_definitions
    for each row when (old.axis = 'quarantine') execute function rl_protect_sentinels();

---- create above / drop below ----

drop trigger rl_definitions_protect_sentinels on rl_definitions;
drop function rl_protect_sentinels();

drop trigger rl_admins_notify on rl_admins;
drop trigger rl_memberships_notify on rl_memberships;
drop trigger rl_definitions_notify on rl_definitions;
drop function rl_notify_change();
drop table rl_audit_log;
drop table rl_api_tokens;
drop table rl_admins;
drop table rl_memberships;
drop table rl_definitions;
