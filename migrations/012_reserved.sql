-- Reserved: migration 012 belongs to another branch of issue 12-15's work.
-- This empty placeholder only lets tern load 015 on the envoy branch (tern
-- refuses a gap). Delete this file when the real 012 lands: it changes
-- nothing, so no database depends on it.

select 1;

---- create above / drop below ----
select 1;
