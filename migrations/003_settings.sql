-- Settings that hold for every replica at once. One row, created the first
-- time anything is set: without it every setting takes its default, so an
-- operator can tell "never set" from "set to the default".
--
-- enforcement_enabled is the master switch (the reference's
-- RATE_LIMITING_ENABLED): false makes every enforcer allow every call and
-- count nothing, quarantine included, until it is switched back on.
create table rl_settings (
    singleton           boolean     primary key default true,
    enforcement_enabled boolean     not null default true,
    reason              text        not null default '',
    updated_at          timestamptz not null default now(),
    updated_by          text        not null default '',
    version             bigint      not null default 1,
    constraint rl_settings_singleton check (singleton),
    constraint rl_settings_reason check (length(reason) <= 500),
    constraint rl_settings_version check (version >= 1)
);

-- Enforcers reload on rlctl_changes as for the other tables (001's
-- rl_notify_change, payload 'rl_settings'), so a switch reaches every
-- replica within a second.
create trigger rl_settings_notify after insert or update or delete or truncate on rl_settings
    for each statement execute function rl_notify_change();

---- create above / drop below ----

drop trigger rl_settings_notify on rl_settings;
drop table rl_settings;
