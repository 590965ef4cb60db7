-- Placeholder: number 004 belongs to a sibling branch's migration. tern
-- refuses a gap ("Missing migration 004"), so this branch carries an empty
-- one to reach 005. Drop it when the real 004 lands.
select 1;

---- create above / drop below ----

select 1;
