-- Networks as membership subjects (issue 12): subject_type 'network', a
-- CIDR of client addresses (10.1.0.0/16, 2001:db8::/48) that can be in
-- rate-limit groups (limiting the anonymous callers inside it) and in
-- quarantine-callers (an IP deny list). internal/validate keeps the
-- subject in canonical masked form; the database checks that it is a
-- network PostgreSQL reads as cidr (no host bits set). Networks are never
-- administrators: rl_admins keeps its subject types.

-- rl_is_cidr: whether s reads as cidr. A cast in a CHECK would raise
-- invalid_text_representation instead of a check violation; this keeps
-- the refusal a constraint's (the API's 400 "rejected by a database
-- constraint"). PostgreSQL 15 has no pg_input_is_valid.
create function rl_is_cidr(s text) returns boolean
language plpgsql immutable strict parallel safe as $$
begin
    perform s::cidr;
    return true;
exception when others then
    return false;
end
$$;

alter table rl_memberships drop constraint rl_memberships_subject_type;
alter table rl_memberships add constraint rl_memberships_subject_type
    check (subject_type in ('user', 'client', 'server', 'agent', 'network'));

alter table rl_memberships add constraint rl_memberships_network_subject
    check (subject_type <> 'network' or (subject ~ '^[0-9a-f.:]+/[0-9]{1,3}$' and rl_is_cidr(subject)));

-- Networks are callers: they may join any caller group and quarantine-callers,
-- never the target kill switch.
alter table rl_memberships drop constraint rl_memberships_target_groups;
alter table rl_memberships add constraint rl_memberships_target_groups check (
    (subject_type in ('server', 'agent') and groups = array['quarantine-targets']) or
    (subject_type in ('user', 'client', 'network') and not ('quarantine-targets' = any (groups))));

---- create above / drop below ----

delete from rl_memberships where subject_type = 'network';
alter table rl_memberships drop constraint rl_memberships_target_groups;
alter table rl_memberships add constraint rl_memberships_target_groups check (
    (subject_type in ('server', 'agent') and groups = array['quarantine-targets']) or
    (subject_type in ('user', 'client') and not ('quarantine-targets' = any (groups))));
alter table rl_memberships drop constraint rl_memberships_network_subject;
alter table rl_memberships drop constraint rl_memberships_subject_type;
alter table rl_memberships add constraint rl_memberships_subject_type
    check (subject_type in ('user', 'client', 'server', 'agent'));
drop function rl_is_cidr(text);
