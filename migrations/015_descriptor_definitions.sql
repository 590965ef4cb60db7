-- Envoy descriptor definitions (issue 14): target definitions of entity
-- type 'descriptor', named <domain>/<key>[=<value>]... (ratelimit.
-- DescriptorName), with their own fields in one jsonb column (unlimited,
-- limit_name, replaces, share_threshold, detailed_metric,
-- value_to_metric: ratelimit.StoredDescriptorFields). An unlimited
-- descriptor has no max_requests; a fixed-window one may have 0 (Envoy's
-- requests_per_unit: 0, which refuses every request).
--
-- Two constraints are widened, not rewritten: other migrations of the same
-- release may widen them too (new entity types), so this one reads each as
-- it stands (pg_get_constraintdef) and adds its own case with OR. The
-- definitions read are kept in rl_015_constraints for the rollback, which
-- restores them as they were and deletes the descriptor definitions (the
-- restored constraints refuse them).

alter table rl_definitions add column descriptor jsonb;

create table rl_015_constraints (
    name text primary key,
    def  text not null
);
insert into rl_015_constraints (name, def)
    select conname, pg_get_constraintdef(oid) from pg_constraint
    where conrelid = 'rl_definitions'::regclass
        and conname in ('rl_definitions_entity_type', 'rl_definitions_target_limits', 'rl_definitions_limits_positive');

do $$
declare
    ent text := (select def from rl_015_constraints where name = 'rl_definitions_entity_type');
    lim text := (select def from rl_015_constraints where name = 'rl_definitions_target_limits');
    pos text := (select def from rl_015_constraints where name = 'rl_definitions_limits_positive');
begin
    if ent is null or lim is null or pos is null or ent not like 'CHECK %' or lim not like 'CHECK %' or pos not like 'CHECK %' then
        raise exception 'migration 015: rl_definitions_entity_type, _target_limits or _limits_positive is missing or not a CHECK';
    end if;
    execute 'alter table rl_definitions drop constraint rl_definitions_entity_type, '
        || 'add constraint rl_definitions_entity_type check (' || substr(ent, 7)
        || ' or (axis = ''target'' and entity_type = ''descriptor''))';
    execute 'alter table rl_definitions drop constraint rl_definitions_target_limits, '
        || 'add constraint rl_definitions_target_limits check (' || substr(lim, 7)
        || ' or (axis = ''target'' and entity_type = ''descriptor'' and max_requests is null'
        || ' and user_max_requests is null and agent_max_requests is null'
        || ' and coalesce((descriptor->>''unlimited'')::boolean, false)))';
    -- requests_per_unit 0 is Envoy's deny list (every request over the
    -- limit): a fixed-window descriptor may have max_requests 0.
    execute 'alter table rl_definitions drop constraint rl_definitions_limits_positive, '
        || 'add constraint rl_definitions_limits_positive check (' || substr(pos, 7)
        || ' or (axis = ''target'' and entity_type = ''descriptor'' and max_requests = 0 and algorithm = ''fixed_window''))';
end
$$;

alter table rl_definitions add constraint rl_definitions_descriptor check (
    (entity_type = 'descriptor') = (descriptor is not null) and
    (descriptor is null or jsonb_typeof(descriptor) = 'object'));

---- create above / drop below ----

alter table rl_definitions drop constraint rl_definitions_descriptor;
delete from rl_definitions where entity_type = 'descriptor';
do $$
declare
    r record;
begin
    for r in select name, def from rl_015_constraints loop
        execute format('alter table rl_definitions drop constraint %I, add constraint %I %s', r.name, r.name, r.def);
    end loop;
end
$$;
drop table rl_015_constraints;
alter table rl_definitions drop column descriptor;
