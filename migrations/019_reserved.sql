-- Migration 019 changes nothing on this branch: its number is another
-- branch's (issue 11's leases), written side by side with 020, and tern
-- refuses a gap in the numbers. Whichever 019 lands first is kept.

select 1;

---- create above / drop below ----
select 1;
