-- Counters of anonymous callers keyed by their client address are
-- selectable by caller (issue 12).
--
-- An anonymous call with a client address counts under the caller
-- ip:<address> (ip:203.0.113.7, ip:2001:db8:1:2::/64: enforce.CallerIP,
-- clientip.Key). 007's rl_counter_caller (rl_counter_caller_007 since 009)
-- knows only user: and agent: callers, so counters of ip callers had no
-- caller, no target on the caller_target axis, no definition, kind or
-- window: `rlctl counters get` listed them without their window and
-- `--caller ip:...` found nothing. rl_counter_caller_011 is 007's body
-- with ip: added to each caller pattern and a prefix length of 3 for it
-- (007 hard-codes 5 for user: and 6 otherwise); the structure is the same
-- (plain SQL that PostgreSQL inlines, regular expressions that only
-- validate, parts cut with strpos and substr, "C" collation). An ip
-- caller's address holds ':' and '/' but never '|', so the caller_target
-- split (the first |mcp_server: or |a2a_agent: after the caller name's
-- first character, else the last '|' followed by <type>:) is unchanged.
--
-- 009's wrapper rl_counter_caller is replaced to call the new function.
-- rl_counter_target_007, _definition_007 and _kind_007 call
-- rl_counter_caller by name and use only the length of what it returns
-- (no prefix length of their own), and rl_counter_window_007 calls _kind
-- and _definition: they follow without change. All three indexes hold
-- values computed through rl_counter_caller (the target and definition
-- ones through rl_counter_target_007 and rl_counter_definition_007), and
-- an index on an immutable function must never see that function change
-- under it, so all three are rebuilt, dropped and created as 009 did.
-- Not REINDEX: PostgreSQL keeps an index's expression in each backend's
-- relation cache with the SQL functions already inlined, and replacing a
-- function does not invalidate it, so a REINDEX in the session that
-- replaced the function rebuilds the index from the old body (and, on
-- rollback, from a function that was just dropped: "cache lookup failed"),
-- and backends that have the index open would go on adding entries by the old
-- body. A new index is a new relation that every backend reads afresh.
-- (internal/migrate's TestMigration011ReadsIPCallersAndRollsBack plants
-- counters before 011 and finds them through the rebuilt indexes.) The
-- indexes are dropped before the functions change, so nothing computes
-- an entry from a mix of the two.
--
-- Dropping an index takes an ACCESS EXCLUSIVE lock on rl_counters, and
-- the migration runs in one transaction, so from the drop until the
-- indexes are built and the migration commits decisions (rl_take) and
-- counter listings wait: about as long as 009's rebuild (about 2 s per
-- 200,000 live counters on a 2-core machine; docs/operations.md).

drop index rl_counters_caller_idx;
drop index rl_counters_target_idx;
drop index rl_counters_definition_idx;

-- rl_counter_caller_011: user:<name>, agent:<client id> or ip:<address>,
-- for c, ct and s keys (unmarked: the wrapper removes an algorithm mark).
-- For ct and caller_target s keys the caller, starting after the window or
-- definition id (length(split_part(p_key, '|', 2)) + 5 or + 4) with a
-- prefix of 5 (user:), 6 (agent:) or 3 (ip:) characters, ends before the
-- first target type mark found from its name's second character.
create function rl_counter_caller_011(p_key text) returns text
    language sql immutable parallel safe as
$$
    select (case split_part(p_key, '|', 1)
        when 'c' then case when p_key ~ '^c\|[1-9][0-9]{0,8}\|(?:user|agent|ip):.' then substr(p_key, length(split_part(p_key, '|', 2)) + 4) end
        when 'ct' then case when p_key ~ '^ct\|[1-9][0-9]{0,8}\|(?:user|agent|ip):.' then coalesce(
            substr(p_key, length(split_part(p_key, '|', 2)) + 5,
                (case when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 3) = 'ip:' then 3
                    when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 5) = 'user:' then 5 else 6 end)
                + least(
                    nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 5 + 1
                        + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 3) = 'ip:' then 3
                            when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 5) = 'user:' then 5 else 6 end)), '|mcp_server:'), 0),
                    nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 5 + 1
                        + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 3) = 'ip:' then 3
                            when substr(p_key, length(split_part(p_key, '|', 2)) + 5, 5) = 'user:' then 5 else 6 end)), '|a2a_agent:'), 0))),
            substring(p_key from '^ct\|[1-9][0-9]{0,8}\|((?:user|agent|ip):.+)\|[^|:]+:')) end
        when 's' then case
            when p_key ~ '^s\|caller:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|(?:user|agent|ip):.' then substr(p_key, length(split_part(p_key, '|', 2)) + 4)
            when p_key ~ '^s\|caller_target:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|(?:user|agent|ip):.' then coalesce(
                substr(p_key, length(split_part(p_key, '|', 2)) + 4,
                    (case when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 3) = 'ip:' then 3
                        when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 5) = 'user:' then 5 else 6 end)
                    + least(
                        nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 4 + 1
                            + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 3) = 'ip:' then 3
                                when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 5) = 'user:' then 5 else 6 end)), '|mcp_server:'), 0),
                        nullif(strpos(substr(p_key, length(split_part(p_key, '|', 2)) + 4 + 1
                            + (case when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 3) = 'ip:' then 3
                                when substr(p_key, length(split_part(p_key, '|', 2)) + 4, 5) = 'user:' then 5 else 6 end)), '|a2a_agent:'), 0))),
                substring(p_key from '^s\|caller_target:group:[^|]*:(?:0|[1-9][0-9]{0,8})\|((?:user|agent|ip):.+)\|[^|:]+:'))
        end
    end) collate "C"
$$;

create or replace function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_caller_011(rl_counter_unmarked(p_key)) $$;

create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));

---- create above / drop below ----

drop index rl_counters_definition_idx;
drop index rl_counters_target_idx;
drop index rl_counters_caller_idx;
create or replace function rl_counter_caller(p_key text) returns text
    language sql immutable parallel safe as
$$ select rl_counter_caller_007(rl_counter_unmarked(p_key)) $$;
drop function rl_counter_caller_011(text);
create index rl_counters_caller_idx on rl_counters (rl_counter_caller(key));
create index rl_counters_target_idx on rl_counters (rl_counter_target(key));
create index rl_counters_definition_idx on rl_counters (rl_counter_definition(key));
