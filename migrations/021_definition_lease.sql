-- A definition's say in leases (issue 15, docs/scaling.md "Leases"). An
-- enforcer with leases on (rlapi --lease-time) decides a hot gate from a
-- block of capacity taken from the shared counter; lease says whether the
-- definition's gates may be:
--
--   auto    the enforcer decides (hot keys, or every key with
--           --lease-keys all): every definition so far, and the default
--   never   never leased, hot or not, even with --lease-keys all: every
--           call is counted on the shared counter
--   always  leased from the first call, hot or not (a gate whose block
--           would be 0 still is not)
--
-- Without leases on the enforcer nothing is leased, whatever it says.
-- The quarantine sentinels count nothing, and an exempt route's paths are
-- never counted: theirs is auto. (A descriptor definition marked
-- unlimited counts nothing either; its flag is inside the descriptor
-- column, and internal/validate refuses the pair.)
--
-- Rolling back drops the column: every definition is auto again, as a
-- binary from before 021 reads them; no row is removed.

alter table rl_definitions
    add column lease text not null default 'auto',
    add constraint rl_definitions_lease check (
        lease in ('auto', 'never', 'always') and
        (lease = 'auto' or (axis <> 'quarantine' and not exempt)));

---- create above / drop below ----

alter table rl_definitions
    drop constraint rl_definitions_lease,
    drop column lease;
