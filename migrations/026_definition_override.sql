-- Overrides: a caller or caller_target definition that takes precedence
-- over the less specific definitions sharing its bucket (one axis, window
-- and algorithm of a caller), raising or lowering their limit, where
-- before the most restrictive one always applied (pkg/enforce/plan,
-- precedence.go; docs/api.md, "Overrides: which limit applies").
--
--   override     false on every definition so far: the most restrictive
--                definition of a bucket applies, as it always has
--   entity_type  user, client and team on the caller and caller_target
--                axes: a definition selecting one subject by name, without
--                membership; an override by nature
--
-- An override counts on the caller's own bucket, which only enforce
-- definitions kept per caller share: none for everyone (the least
-- specific level, with nothing below it), per ip, team or shared, or in
-- shadow mode.
--
-- Rolling back removes the subject definitions (a binary before 026 does
-- not know their entity types) and the column: every other definition
-- reads as before, the most restrictive of a bucket applying.

alter table rl_definitions
    add column override boolean not null default false;

create table rl_026_constraints (
    name text primary key,
    def  text not null
);
insert into rl_026_constraints (name, def)
    select conname, pg_get_constraintdef(oid) from pg_constraint
    where conrelid = 'rl_definitions'::regclass and conname = 'rl_definitions_entity_type';

do $$
declare
    ent text := (select def from rl_026_constraints where name = 'rl_definitions_entity_type');
begin
    if ent is null or ent not like 'CHECK %' then
        raise exception 'migration 026: rl_definitions_entity_type is missing or not a CHECK';
    end if;
    execute 'alter table rl_definitions drop constraint rl_definitions_entity_type, '
        || 'add constraint rl_definitions_entity_type check (' || substr(ent, 7)
        || ' or (axis in (''caller'', ''caller_target'') and entity_type in (''user'', ''client'', ''team'')))';
end
$$;

alter table rl_definitions
    add constraint rl_definitions_override check (
        not override or
        (axis in ('caller', 'caller_target') and not everyone and per = 'caller' and
         (mode = 'enforce' or entity_type in ('user', 'client', 'team')))),
    add constraint rl_definitions_subject check (
        entity_type not in ('user', 'client', 'team') or axis not in ('caller', 'caller_target') or
        (override and not everyone and per = 'caller'));

---- create above / drop below ----

alter table rl_definitions
    drop constraint rl_definitions_subject,
    drop constraint rl_definitions_override;

delete from rl_definitions
    where axis in ('caller', 'caller_target') and entity_type in ('user', 'client', 'team');

do $$
declare
    r record;
begin
    for r in select name, def from rl_026_constraints loop
        execute format('alter table rl_definitions drop constraint %I, add constraint %I %s', r.name, r.name, r.def);
    end loop;
end
$$;
drop table rl_026_constraints;

alter table rl_definitions drop column override;
