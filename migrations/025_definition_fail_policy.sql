-- A definition's fail policy: what an enforcer decides for its gates while
-- the counter store cannot be reached (pkg/ratelimit, FailPolicy*):
--
--   ''       the enforcer's default (rlapi --fail-policy): every
--            definition so far that is not fail_closed
--   open     the call passes, uncounted
--   closed   the call is refused: what fail_closed = true said
--   degrade  each replica enforces its share of the limit in its own
--            memory (docs/operations.md, "Degraded mode")
--
-- fail_closed stays, as the older spelling of closed: rows with
-- fail_closed = true read fail_policy 'closed' from here on. The two are
-- kept in step, fail_closed = (fail_policy = 'closed'), because replicas
-- of the version before 025 still read fail_closed alone during a rolling
-- deploy: the API writes both, and the trigger below keeps an older
-- replica's write (which sets fail_closed and knows no fail_policy) in
-- step too, so neither version reads a policy the other did not write.
-- Those replicas read a degrade definition as not fail_closed, the
-- enforcer's default, as they would any other.
--
-- The quarantine sentinels count nothing, so they take no fail policy;
-- their fail_closed, which the API has always taken, is left as it is.
--
-- Rolling back drops the column, the trigger and the constraints: every
-- definition reads as its fail_closed says, as a binary from before 025
-- reads them (degrade as the enforcer's default); no row is removed.

alter table rl_definitions
    add column fail_policy text not null default '';

update rl_definitions set fail_policy = 'closed' where fail_closed and axis <> 'quarantine';

alter table rl_definitions
    add constraint rl_definitions_fail_policy check (
        fail_policy in ('', 'open', 'closed', 'degrade') and
        (fail_policy = '' or axis <> 'quarantine')),
    add constraint rl_definitions_fail_policy_fail_closed check (
        axis = 'quarantine' or fail_closed = (fail_policy = 'closed'));

-- An older replica writes fail_closed and leaves fail_policy as it was
-- (an insert takes the default, ''): its fail_closed decides. The API of
-- this version writes both in step, so a fail_closed that changes comes
-- with a fail_policy that changes, and the trigger leaves it alone.
create function rl_definitions_fail_policy_of_fail_closed() returns trigger
    language plpgsql as
$$
begin
    if new.axis = 'quarantine' then
        return new;
    end if;
    if tg_op = 'INSERT' then
        if new.fail_closed and new.fail_policy = '' then
            new.fail_policy := 'closed';
        end if;
    elsif new.fail_closed is distinct from old.fail_closed and new.fail_policy is not distinct from old.fail_policy then
        new.fail_policy := case when new.fail_closed then 'closed' else '' end;
    end if;
    return new;
end
$$;

create trigger rl_definitions_fail_policy_of_fail_closed
    before insert or update on rl_definitions
    for each row execute function rl_definitions_fail_policy_of_fail_closed();

---- create above / drop below ----

drop trigger rl_definitions_fail_policy_of_fail_closed on rl_definitions;
drop function rl_definitions_fail_policy_of_fail_closed();

alter table rl_definitions
    drop constraint rl_definitions_fail_policy_fail_closed,
    drop constraint rl_definitions_fail_policy,
    drop column fail_policy;
