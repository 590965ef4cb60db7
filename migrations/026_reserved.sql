-- Migration 026 changes nothing on this branch: its number is another
-- branch's, written side by side with 027, and tern refuses a gap in the
-- numbers. Whichever 026 lands first is kept.

select 1;

---- create above / drop below ----
select 1;
