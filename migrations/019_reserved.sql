-- Migration 019 changes nothing, for good: its number was reserved for
-- work that turned out to need no schema (issue 15's leases), written side
-- by side with 020, and tern refuses a gap in the numbers (as 014).

select 1;

---- create above / drop below ----
select 1;
