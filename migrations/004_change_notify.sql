-- Change notifications name the rows they are about, so a reader reloads
-- those rows instead of the whole table (docs/design.md, "Change
-- notification").
--
-- 001's triggers send the table name alone. These send, per statement,
-- {"table": "<table>", "ids": [...]} with the id of every row the statement
-- inserted, updated or deleted (a definition's id; a membership's or an
-- admin's <subject_type>:<subject>), read from the statement's transition
-- tables. A statement that touched more than 64 rows, or whose payload would
-- pass 7,900 bytes (PostgreSQL's limit is 8,000), sends {"table": "<table>"}:
-- reload that table whole. A statement that touched no row sends nothing.
-- TRUNCATE keeps 001's plain table-name payload, which readers also read
-- as "the whole table".
--
-- Identical payloads still fold within a transaction; distinct ones do
-- not, so a transaction of many single-row statements sends one
-- notification each. The API's writes are one statement per kind of row.

create function rl_notify_ids(p_table text, p_ids text[]) returns void
    language plpgsql as
$$
declare
    payload text;
begin
    if coalesce(cardinality(p_ids), 0) = 0 then
        return;
    end if;
    payload := json_build_object('table', p_table, 'ids', p_ids)::text;
    if cardinality(p_ids) > 64 or octet_length(payload) > 7900 then
        payload := json_build_object('table', p_table)::text;
    end if;
    perform pg_notify('rlctl_changes', payload);
end
$$;

-- At most 65 ids are read from each transition table: more than 64 means
-- "the whole table" anyway, so a 100,000-row COPY costs no more than a
-- small one here.
create function rl_notify_definition_rows() returns trigger
    language plpgsql as
$$
begin
    if tg_op = 'INSERT' then
        perform rl_notify_ids(tg_table_name, array(select id from rl_new limit 65));
    elsif tg_op = 'DELETE' then
        perform rl_notify_ids(tg_table_name, array(select id from rl_old limit 65));
    else
        perform rl_notify_ids(tg_table_name, array(
            (select id from rl_new limit 65) union (select id from rl_old limit 65)));
    end if;
    return null;
end
$$;

-- Memberships and admins: both keyed by (subject_type, subject).
create function rl_notify_subject_rows() returns trigger
    language plpgsql as
$$
begin
    if tg_op = 'INSERT' then
        perform rl_notify_ids(tg_table_name, array(select subject_type || ':' || subject from rl_new limit 65));
    elsif tg_op = 'DELETE' then
        perform rl_notify_ids(tg_table_name, array(select subject_type || ':' || subject from rl_old limit 65));
    else
        perform rl_notify_ids(tg_table_name, array(
            (select subject_type || ':' || subject from rl_new limit 65) union
            (select subject_type || ':' || subject from rl_old limit 65)));
    end if;
    return null;
end
$$;

drop trigger rl_definitions_notify on rl_definitions;
drop trigger rl_memberships_notify on rl_memberships;
drop trigger rl_admins_notify on rl_admins;

-- A trigger with transition tables takes one event, hence four per table.
create trigger rl_definitions_notify_insert after insert on rl_definitions
    referencing new table as rl_new for each statement execute function rl_notify_definition_rows();
create trigger rl_definitions_notify_update after update on rl_definitions
    referencing old table as rl_old new table as rl_new for each statement execute function rl_notify_definition_rows();
create trigger rl_definitions_notify_delete after delete on rl_definitions
    referencing old table as rl_old for each statement execute function rl_notify_definition_rows();
create trigger rl_definitions_notify_truncate after truncate on rl_definitions
    for each statement execute function rl_notify_change();

create trigger rl_memberships_notify_insert after insert on rl_memberships
    referencing new table as rl_new for each statement execute function rl_notify_subject_rows();
create trigger rl_memberships_notify_update after update on rl_memberships
    referencing old table as rl_old new table as rl_new for each statement execute function rl_notify_subject_rows();
create trigger rl_memberships_notify_delete after delete on rl_memberships
    referencing old table as rl_old for each statement execute function rl_notify_subject_rows();
create trigger rl_memberships_notify_truncate after truncate on rl_memberships
    for each statement execute function rl_notify_change();

create trigger rl_admins_notify_insert after insert on rl_admins
    referencing new table as rl_new for each statement execute function rl_notify_subject_rows();
create trigger rl_admins_notify_update after update on rl_admins
    referencing old table as rl_old new table as rl_new for each statement execute function rl_notify_subject_rows();
create trigger rl_admins_notify_delete after delete on rl_admins
    referencing old table as rl_old for each statement execute function rl_notify_subject_rows();
create trigger rl_admins_notify_truncate after truncate on rl_admins
    for each statement execute function rl_notify_change();

---- create above / drop below ----

drop trigger rl_admins_notify_truncate on rl_admins;
drop trigger rl_admins_notify_delete on rl_admins;
drop trigger rl_admins_notify_update on rl_admins;
drop trigger rl_admins_notify_insert on rl_admins;
drop trigger rl_memberships_notify_truncate on rl_memberships;
drop trigger rl_memberships_notify_delete on rl_memberships;
drop trigger rl_memberships_notify_update on rl_memberships;
drop trigger rl_memberships_notify_insert on rl_memberships;
drop trigger rl_definitions_notify_truncate on rl_definitions;
drop trigger rl_definitions_notify_delete on rl_definitions;
drop trigger rl_definitions_notify_update on rl_definitions;
drop trigger rl_definitions_notify_insert on rl_definitions;

create trigger rl_definitions_notify after insert or update or delete or truncate on rl_definitions
    for each statement execute function rl_notify_change();
create trigger rl_memberships_notify after insert or update or delete or truncate on rl_memberships
    for each statement execute function rl_notify_change();
create trigger rl_admins_notify after insert or update or delete or truncate on rl_admins
    for each statement execute function rl_notify_change();

drop function rl_notify_subject_rows();
drop function rl_notify_definition_rows();
drop function rl_notify_ids(text, text[]);
