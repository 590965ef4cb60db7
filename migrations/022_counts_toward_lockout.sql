-- Whether a definition's throttles count as the caller's violations
-- toward an escalation lockout (rlapi --lockout-after; docs/operations.md,
-- "Escalation lockouts"). NULL, the default and every definition so far,
-- lets the bucket decide: one kept for the caller alone counts (caller,
-- caller_target, per ip, a route's or tool's per-caller buckets), one
-- others share does not (a target's own limit, a route's all bucket, per
-- team, shared buckets, descriptors). true or false decides instead.
--
-- Rolling back drops the column: every definition is decided by its
-- bucket again, as a binary from before 022 reads them (which, before
-- this column existed, counted every throttle); no row is removed.

alter table rl_definitions
    add column counts_toward_lockout boolean,
    add constraint rl_definitions_counts_toward_lockout check (
        counts_toward_lockout is null or axis <> 'quarantine');

---- create above / drop below ----

alter table rl_definitions
    drop constraint rl_definitions_counts_toward_lockout,
    drop column counts_toward_lockout;
