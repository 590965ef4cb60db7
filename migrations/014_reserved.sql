-- Migration 014 changes nothing. Its number was reserved while 012 to 017
-- were written side by side, and the work meant for it (per-definition
-- escalation lockouts) did not need a table in the end; tern refuses a gap
-- in the numbers, so this no-op keeps them contiguous. Never remove it: a
-- database at 14 or later has counted it.

select 1;

---- create above / drop below ----
select 1;
