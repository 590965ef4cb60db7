-- Algorithms: a definition counts with a fixed window (every definition
-- so far, and the default), a sliding window (weighted two-window counter)
-- or a token bucket (GCRA: one theoretical arrival time per key), with a
-- burst per axis for the token bucket.
--
-- rl_take counts every algorithm (shared/rl_take_008.sql has its
-- arithmetic). Its first eight arguments and its first three results are
-- 002's, so a replica still on the previous binary keeps calling it
-- unchanged while the new one rolls out, counting the same fixed-window
-- rows (the keys and window indexes of fixed windows did not change). Its
-- results gain one (previous), so it is dropped and created rather than
-- replaced; rl_take_decide, 006's arithmetic, is no longer used. The
-- rollback restores both from 006's template.
--
-- Rows of rl_counters keep their columns: a sliding window's row is a fixed
-- window's (key, window index, count); a token bucket's row has window
-- index 0, its TAT in nanoseconds since the epoch as its count, and expires
-- once the bucket is full again (a full bucket needs no row): at the latest
-- tau (a whole burst's refill) after its TAT, its expiry moved on only when
-- the TAT passes it, so that most takes stay HOT updates. A reset, which
-- sets counts to 0, fills a bucket.

alter table rl_definitions
    add column algorithm   text    not null default 'fixed_window',
    add column burst       integer,
    add column user_burst  integer,
    add column agent_burst integer,
    add constraint rl_definitions_algorithm
        check (algorithm in ('fixed_window', 'sliding_window', 'token_bucket')),
    add constraint rl_definitions_bursts_positive check (
        coalesce(burst, 1) >= 1 and coalesce(user_burst, 1) >= 1 and coalesce(agent_burst, 1) >= 1),
    -- Only a token bucket has a capacity, and each burst sits beside the
    -- limits of its axis: burst on the target axis, user_burst and
    -- agent_burst on the caller axes.
    add constraint rl_definitions_bursts_token_bucket check (
        algorithm = 'token_bucket' or (burst is null and user_burst is null and agent_burst is null)),
    add constraint rl_definitions_burst_axes check (
        (burst is null or axis = 'target') and
        ((user_burst is null and agent_burst is null) or axis in ('caller', 'caller_target'))),
    add constraint rl_definitions_quarantine_algorithm check (
        axis <> 'quarantine' or algorithm = 'fixed_window');

drop function rl_take(int[], text[], bigint[], bigint[], boolean[], timestamptz[], bigint[], boolean[]);
drop function rl_take_decide(int[], bigint[], boolean[], bigint[], boolean[], int[], boolean[], bigint[], boolean[], bigint[], boolean[]);

{{ template "shared/rl_take_008.sql" . }}

---- create above / drop below ----

drop function rl_take(int[], text[], bigint[], bigint[], boolean[], timestamptz[], bigint[], boolean[], text[], bigint[], bigint[], bigint[]);
drop function rl_take_gates(int[], text[], bigint[], bigint[], boolean[], timestamptz[], bigint[], boolean[], text[], bigint[], bigint[], bigint[], int);

{{ template "shared/rl_take_006.sql" . }}

alter table rl_definitions
    drop constraint rl_definitions_quarantine_algorithm,
    drop constraint rl_definitions_burst_axes,
    drop constraint rl_definitions_bursts_token_bucket,
    drop constraint rl_definitions_bursts_positive,
    drop constraint rl_definitions_algorithm,
    drop column agent_burst,
    drop column user_burst,
    drop column burst,
    drop column algorithm;
