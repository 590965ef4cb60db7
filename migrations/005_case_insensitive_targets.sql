-- Server and agent names are case-insensitive from this version:
-- internal/validate stores them lower-cased (mcp_server and a2a_agent names,
-- the server or agent part of mcp_tool and a2a_skill names, server-group
-- members, server and agent membership subjects) and gateways lower-case the
-- paths they classify (enforce.TargetFromURI). Rows an older rlapi wrote in
-- mixed case could no longer be reached through the API, nor match a call:
-- this migration lower-cases them the way validate does now. Tool and skill
-- names, group names, user and client subjects keep their case.
--
-- Two rows that differ only in case would become one. Neither is dropped
-- silently: the migration fails naming both, and, as it runs in one
-- transaction, changes nothing; the operator deletes one and runs
-- `rlapi migrate` again.
--
-- Counters (soft state) follow their target: a counter of a renamed
-- definition, server-group member or caller_target target moves to the new
-- key, adding to a counter already there, so a limit used up before the
-- upgrade stays used up for the rest of its window.
--
-- lower() folds case by the database's LC_CTYPE. With a UTF-8 locale it maps
-- non-ASCII letters as Go's strings.ToLower does; with the C or POSIX locale
-- it maps ASCII only, so there the migration refuses to run if a name to
-- rename holds a non-ASCII upper-case letter (or, without PostgreSQL's C.utf8
-- collation to tell, any non-ASCII character) rather than leave it
-- unreachable.

-- Every target definition whose name holds a server or agent: head is the
-- part that is lower-cased (all of an mcp_server or a2a_agent name; the part
-- before the last ':' of an mcp_tool or a2a_skill name, whose tool or skill
-- keeps its case).
create temporary table rl_005_all_definitions on commit drop as
select id as old_id, head, lower(head) || tail as new_name,
       axis || ':' || entity_type || ':' || lower(head) || tail || ':' || window_seconds as new_id
from (
    select id, axis, entity_type, window_seconds,
           case when entity_type in ('mcp_server', 'a2a_agent') then name
                else left(name, length(name) - length(substring(name from '[^:]*$'))) end as head,
           case when entity_type in ('mcp_server', 'a2a_agent') then ''
                else substring(name from '[^:]*$') end as tail
    from rl_definitions
    where axis = 'target' and entity_type in ('mcp_server', 'a2a_agent', 'mcp_tool', 'a2a_skill')
) d;

-- The ones that change.
create temporary table rl_005_definitions on commit drop as
select old_id, new_name, new_id from rl_005_all_definitions where new_id <> old_id;

do $$
declare
    problems text[] := '{}';
    p text;
begin
    if lower('ÄΣ') <> 'äσ' then
        -- rl_005_needs_unicode(x): x holds non-ASCII characters that may be
        -- upper case. PostgreSQL's own C.utf8 collation, where it exists,
        -- tells a non-ASCII name that is lower case already, which needs
        -- nothing; without it every non-ASCII name is suspect.
        if exists (select 1 from pg_collation where collname = 'C.utf8' and collencoding in (-1, 6)) then
            create function pg_temp.rl_005_needs_unicode(x text) returns boolean language sql immutable
                as $f$ select octet_length(x) <> length(x) and x <> lower(x collate "C.utf8") $f$;
        else
            create function pg_temp.rl_005_needs_unicode(x text) returns boolean language sql immutable
                as $f$ select octet_length(x) <> length(x) $f$;
        end if;
        for p in
            select format('definition %L', old_id) from rl_005_all_definitions where pg_temp.rl_005_needs_unicode(head)
            union all
            select format('membership %L', subject_type || ':' || subject) from rl_memberships
            where subject_type in ('server', 'agent') and pg_temp.rl_005_needs_unicode(subject)
            union all
            select format('members of %L', id) from rl_definitions
            where entity_type = 'server_group' and exists (select 1 from unnest(members) m where pg_temp.rl_005_needs_unicode(m))
        loop
            problems := problems || p;
        end loop;
        drop function pg_temp.rl_005_needs_unicode(text);
        if cardinality(problems) > 0 then
            raise exception 'migration 005 (case-insensitive server and agent names): this database''s LC_CTYPE lower-cases ASCII only, and %: rename them to lower case by hand (or delete them) and run `rlapi migrate` again; nothing was changed',
                array_to_string(problems, ', ') || ' hold non-ASCII upper-case letters'
                using errcode = 'check_violation';
        end if;
    end if;

    for p in
        select format('definitions %s would become one, %L', string_agg(format('%L', id), ' and ' order by id), new_id)
        from (
            select coalesce(m.new_id, d.id) as new_id, d.id
            from rl_definitions d left join rl_005_definitions m on m.old_id = d.id
        ) x
        group by new_id
        having count(*) > 1
        union all
        select format('memberships %s would become one, %L', string_agg(format('%L', id), ' and ' order by id),
                      subject_type || ':' || lower(subject))
        from (select subject_type, subject, subject_type || ':' || subject as id from rl_memberships
              where subject_type in ('server', 'agent')) x
        group by subject_type, lower(subject)
        having count(*) > 1
    loop
        problems := problems || p;
    end loop;
    if cardinality(problems) > 0 then
        raise exception 'migration 005 (case-insensitive server and agent names): rows differ only in case: %; delete one of each (psql: delete from rl_definitions where id = ''<id>''; delete from rl_memberships where subject_type = ''server'' and subject = ''<subject>'') and run `rlapi migrate` again; nothing was changed',
            array_to_string(problems, '; ')
            using errcode = 'unique_violation';
    end if;
end
$$;

-- Counters move first, while the mapping of old ids is at hand.
create temporary table rl_005_counter_keys on commit drop as
select key, new_key
from (
    select k.key,
           case
               when k.key ~ '^t\|target:server_group:[^|]*\|' then
                   (regexp_match(k.key, '^(t\|target:server_group:[^|]*\|)(.*)$'))[1] ||
                   lower((regexp_match(k.key, '^(t\|target:server_group:[^|]*\|)(.*)$'))[2])
               when m.new_id is not null then 't|' || m.new_id
               -- ct|<window>|<caller>|<type>:<name> and
               -- s|<caller_target definition>|<caller>|<type>:<name>: the
               -- target is last, after the last |mcp_server: or |a2a_agent:.
               when k.key ~ '^(ct\||s\|caller_target:)' and k.key ~ '\|(mcp_server|a2a_agent):' then
                   (regexp_match(k.key, '^(.*\|(mcp_server|a2a_agent):)(.*)$'))[1] ||
                   lower((regexp_match(k.key, '^(.*\|(mcp_server|a2a_agent):)(.*)$'))[3])
               else k.key
           end as new_key
    from (select distinct key from rl_counters) k
    left join rl_005_definitions m on k.key = 't|' || m.old_id
) x
where new_key <> key;

with moved as (
    delete from rl_counters c using rl_005_counter_keys k
    where c.key = k.key
    returning k.new_key, c.window_index, c.count, c.expires_at
)
insert into rl_counters (key, window_index, count, expires_at)
select new_key, window_index, sum(count)::bigint, max(expires_at)
from moved
group by new_key, window_index
on conflict (key, window_index) do update
    set count = rl_counters.count + excluded.count,
        expires_at = greatest(rl_counters.expires_at, excluded.expires_at);

-- Definitions: the id holds the name (rl_definitions_id_format), so both
-- change together.
insert into rl_audit_log (actor, action, resource_type, resource_id, before, after)
select 'migration', 'rename', 'definition', new_id, jsonb_build_object('id', old_id), jsonb_build_object('id', new_id)
from rl_005_definitions;

update rl_definitions d
set id = m.new_id, name = m.new_name, version = d.version + 1, updated_at = now(), updated_by = 'migration'
from rl_005_definitions m
where d.id = m.old_id;

-- Server-group members: lower-cased, a member listed in two spellings kept
-- once, where it first appeared (as validate de-duplicates them).
create temporary table rl_005_members on commit drop as
select d.id, d.members as old_members, n.members as new_members
from rl_definitions d
cross join lateral (
    select array_agg(m order by first) as members
    from (select lower(m) as m, min(o) as first from unnest(d.members) with ordinality u(m, o) group by lower(m)) x
) n
where d.entity_type = 'server_group' and d.members <> n.members;

insert into rl_audit_log (actor, action, resource_type, resource_id, before, after)
select 'migration', 'update', 'definition', id, jsonb_build_object('members', old_members), jsonb_build_object('members', new_members)
from rl_005_members;

update rl_definitions d
set members = m.new_members, version = d.version + 1, updated_at = now(), updated_by = 'migration'
from rl_005_members m
where d.id = m.id;

-- Server and agent memberships (only ever quarantine-targets).
insert into rl_audit_log (actor, action, resource_type, resource_id, before, after)
select 'migration', 'rename', 'membership', subject_type || ':' || lower(subject),
       jsonb_build_object('id', subject_type || ':' || subject), jsonb_build_object('id', subject_type || ':' || lower(subject))
from rl_memberships
where subject_type in ('server', 'agent') and subject <> lower(subject);

update rl_memberships
set subject = lower(subject), version = version + 1, updated_at = now()
where subject_type in ('server', 'agent') and subject <> lower(subject);

drop table rl_005_members;
drop table rl_005_counter_keys;
drop table rl_005_definitions;
drop table rl_005_all_definitions;

---- create above / drop below ----

-- Nothing to undo: the case the names had before is not recoverable, and
-- lower-cased names are valid for the older schema as well.
select 1;
