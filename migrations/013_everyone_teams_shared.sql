-- Limits for everyone, teams and shared buckets (issue 12).
--
-- Definitions: a caller or caller_target definition may select every
-- caller without membership (everyone) and say what one of its buckets
-- counts (per): each caller its own (caller, the default and every
-- definition so far), each client IP (ip), each team (team), or one
-- bucket shared by every caller it selects (shared).
--
-- Memberships: subject_type 'team', a team (tenant) a call names; a team
-- is a caller, so it may join any caller group and quarantine-callers,
-- never the target kill switch. Team names hold no '|' (it separates the
-- parts of a counter key) and no whitespace (as every stored subject).
--
-- Counter keys: definitions per ip, per team and shared count under keys
-- of a new kind p (enforce.KindPer), marked .tb or .sw like the others:
--
--   p|caller:group:<name>:D|<subject>                per ip or per team
--   p|caller_target:group:<name>:D|<subject>|<target>
--   p|caller:group:<name>:D                          shared
--   p|caller_target:group:<name>:D|<target>          shared, per target
--
-- <subject> is ip:<key> or team:<name> (neither holds '|', nor does a
-- group definition's id), so the parts are cut at '|'. The functions of
-- 007/009/011 read no p key; rl_counter_*_013 read them, and the wrappers
-- rl_counter_caller, _target, _definition and _kind send a p key to them
-- and any other key where it went before (rl_counter_window and
-- rl_counter_algorithm go through rl_counter_kind and _definition by name
-- and follow). The subject is a p key's caller, so `rlctl counters get
-- --caller ip:203.0.113.7` or `--caller team:acme` lists those buckets.
-- rl_counter_unmarked learns p.tb and p.sw. As 009 and 011 did, the three
-- indexes are dropped before the functions change and built again after
-- (an index on an immutable function must never see it change; not
-- REINDEX, see 011), under the same lock (docs/operations.md).

alter table rl_definitions
    add column everyone boolean not null default false,
    add column per      text    not null default 'caller',
    add constraint rl_definitions_per check (per in ('caller', 'ip', 'team', 'shared')),
    add constraint rl_definitions_selectors check (
        (not everyone and per = 'caller') or axis in ('caller', 'caller_target'));

alter table rl_memberships drop constraint rl_memberships_subject_type;
alter table rl_memberships add constraint rl_memberships_subject_type
    check (subject_type in ('user', 'client', 'server', 'agent', 'network', 'team'));
alter table rl_memberships drop constraint rl_memberships_target_groups;
alter table rl_memberships add constraint rl_memberships_target_groups check (
    (subject_type in ('server', 'agent') and groups = array['quarantine-targets']) or
    (subject_type in ('user', 'client', 'network', 'team') and not ('quarantine-targets' = any (groups))));
alter table rl_memberships add constraint rl_memberships_team_subject
    check (subject_type <> 'team' or (strpos(subject, '|') = 0 and subject !~ '\s'));

drop index rl_counters_caller_idx;
drop index rl_counters_target_idx;
drop index rl_counters_definition_idx;

create or replace function rl_counter_unmarked(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case split_part(p_key, '|', 1)
        when 'c.tb' then 'c' || substr(p_key, 5)
        when 'c.sw' then 'c' || substr(p_key, 5)
        when 't.tb' then 't' || substr(p_key, 5)
        when 't.sw' then 't' || substr(p_key, 5)
        when 's.tb' then 's' || substr(p_key, 5)
        when 's.sw' then 's' || substr(p_key, 5)
        when 'p.tb' then 'p' || substr(p_key, 5)
        when 'p.sw' then 'p' || substr(p_key, 5)
        when 'ct.tb' then 'ct' || substr(p_key, 6)
        when 'ct.sw' then 'ct' || substr(p_key, 6)
        else p_key
    end
$$;

-- rl_counter_form_013: which of the four p key forms an unmarked key is
-- (subject, subject_target, shared, shared_target), null when it is none.
-- The same rules as enforce.ParseCounterKey: a subject has a name of at
-- least one character; a target is <type>:<name> with a type of at least
-- one character; a shared caller_target key's target is not a subject.
create function rl_counter_form_013(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case
        when p_key ~ '^p\|caller:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|(?:ip|team):[^|]+$' then 'subject'
        when p_key ~ '^p\|caller_target:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|(?:ip|team):[^|]+\|[^:]+:' then 'subject_target'
        when p_key ~ '^p\|caller:group:[^|]*:(?:0|[1-9][0-9]{0,8})$' then 'shared'
        when p_key ~ '^p\|caller_target:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|(?!ip:|team:)[^:]+:' then 'shared_target'
    end
$$;

create function rl_counter_caller_013(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case when rl_counter_form_013(p_key) in ('subject', 'subject_target') then split_part(p_key, '|', 3) end) collate "C"
$$;

create function rl_counter_target_013(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case rl_counter_form_013(p_key)
        when 'subject_target' then substr(p_key, length(split_part(p_key, '|', 2)) + length(split_part(p_key, '|', 3)) + 5)
        when 'shared_target' then substr(p_key, length(split_part(p_key, '|', 2)) + 4)
    end) collate "C"
$$;

create function rl_counter_definition_013(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case when rl_counter_form_013(p_key) is not null then split_part(p_key, '|', 2) end) collate "C"
$$;

create or replace function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_caller_013(rl_counter_unmarked(p_key))
        else rl_counter_caller_011(rl_counter_unmarked(p_key)) end
$$;

create or replace function rl_counter_target(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_target_013(rl_counter_unmarked(p_key))
        else rl_counter_target_007(rl_counter_unmarked(p_key)) end
$$;

create or replace function rl_counter_definition(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then rl_counter_definition_013(rl_counter_unmarked(p_key))
        else rl_counter_definition_007(rl_counter_unmarked(p_key)) end
$$;

create or replace function rl_counter_kind(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case when split_part(rl_counter_unmarked(p_key), '|', 1) = 'p'
        then case when rl_counter_form_013(rl_counter_unmarked(p_key)) is not null then 'p' end
        else rl_counter_kind_007(rl_counter_unmarked(p_key)) end
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
$$ select rl_counter_caller_011(rl_counter_unmarked(p_key)) $$;
create or replace function rl_counter_target(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_target_007(rl_counter_unmarked(p_key)) $$;
create or replace function rl_counter_definition(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_definition_007(rl_counter_unmarked(p_key)) $$;
create or replace function rl_counter_kind(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_kind_007(rl_counter_unmarked(p_key)) $$;
drop function rl_counter_definition_013(text);
drop function rl_counter_target_013(text);
drop function rl_counter_caller_013(text);
drop function rl_counter_form_013(text);
create or replace function rl_counter_unmarked(p_key text) returns text
    language sql immutable parallel safe as
$$
    select case split_part(p_key, '|', 1)
        when 'c.tb' then 'c' || substr(p_key, 5)
        when 'c.sw' then 'c' || substr(p_key, 5)
        when 't.tb' then 't' || substr(p_key, 5)
        when 't.sw' then 't' || substr(p_key, 5)
        when 's.tb' then 's' || substr(p_key, 5)
        when 's.sw' then 's' || substr(p_key, 5)
        when 'ct.tb' then 'ct' || substr(p_key, 6)
        when 'ct.sw' then 'ct' || substr(p_key, 6)
        else p_key
    end
$$;

create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

delete from rl_counters where split_part(key, '|', 1) in ('p', 'p.tb', 'p.sw');
delete from rl_memberships where subject_type = 'team';
alter table rl_memberships drop constraint rl_memberships_team_subject;
alter table rl_memberships drop constraint rl_memberships_target_groups;
alter table rl_memberships add constraint rl_memberships_target_groups check (
    (subject_type in ('server', 'agent') and groups = array['quarantine-targets']) or
    (subject_type in ('user', 'client', 'network') and not ('quarantine-targets' = any (groups))));
alter table rl_memberships drop constraint rl_memberships_subject_type;
alter table rl_memberships add constraint rl_memberships_subject_type
    check (subject_type in ('user', 'client', 'server', 'agent', 'network'));

delete from rl_definitions where everyone or per <> 'caller';
alter table rl_definitions
    drop constraint rl_definitions_selectors,
    drop constraint rl_definitions_per,
    drop column per,
    drop column everyone;
