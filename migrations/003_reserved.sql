-- Placeholder: number 003 belongs to a sibling branch's migration. tern
-- refuses a gap ("Missing migration 003"), so this branch carries an empty
-- one to reach 005. Drop it when the real 003 lands.
select 1;

---- create above / drop below ----

select 1;
