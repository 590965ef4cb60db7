-- A placeholder on branch i12/routes only: tern refuses a gap in the
-- numbers, and this branch's migration is 016 while 012-015 belong to other
-- branches. When the real 012 lands, this file goes (it does nothing).
select 1;

---- create above / drop below ----

select 1;
