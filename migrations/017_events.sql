-- The record of violations (issue 13): throttles, quarantine denials,
-- lockouts and failed-credential lockouts, aggregated by the enforcers
-- (pkg/enforce's recorder) into one row per (minute, kind, subject,
-- definition) with a count, so a flood writes a bounded number of rows.
-- Each flush upserts: a row's count grows while its minute lasts. The
-- context columns hold the latest event of the row. rlapi deletes rows
-- older than its retention (--events-retention, default 7 days).
create table rl_events (
    id            bigint generated always as identity primary key,
    minute        timestamptz not null check (extract(second from minute) = 0),
    kind          text not null check (kind ~ '^[a-z][a-z0-9_]{0,62}$'),
    severity      text not null check (severity in ('info', 'warn', 'high', 'critical')),
    -- subject is the caller (user:alice, agent:bot, ip:203.0.113.7) or,
    -- for a target's limit or quarantine, the target (mcp_server:x).
    subject       text not null check (length(subject) between 1 and 1024),
    definition_id text not null default '' check (length(definition_id) <= 1024),
    caller        text not null default '' check (length(caller) <= 1024),
    client_ip     text not null default '' check (length(client_ip) <= 64),
    target_type   text not null default '' check (length(target_type) <= 64),
    target        text not null default '' check (length(target) <= 1024),
    tier          text not null default '' check (length(tier) <= 256),
    rate_limit    bigint not null default 0 check (rate_limit >= 0),
    count         bigint not null check (count >= 1),
    first_seen    timestamptz not null,
    last_seen     timestamptz not null,
    constraint rl_events_seen check (last_seen >= first_seen),
    constraint rl_events_key unique (minute, kind, subject, definition_id)
);
create index rl_events_minute_idx on rl_events (minute);
create index rl_events_subject_idx on rl_events (subject, id);

---- create above / drop below ----

drop table rl_events;
