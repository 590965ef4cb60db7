-- The record of violations keeps who did it and what was asked, as
-- reference 004's audit events do (user, team, client address, endpoint,
-- tier, limit): team is the call's team when the gateway named one, path
-- the request path of a route's call (the endpoint). more_subjects makes
-- a row a summary: the recorder writes at most so many subjects' rows a
-- minute (rlapi --events-rows-per-minute), and folds the rest of a
-- definition's minute into one row, subject overflow:subjects, whose count
-- is their calls and more_subjects how many subjects they were. 0 on every
-- subject's own row, and on every row written before 023.
--
-- Rolling back drops the three columns: a binary from before 023 reads the
-- rows as it always did; summary rows stay, as rows of their subject.

alter table rl_events
    add column team text not null default '' check (length(team) <= 1024),
    add column path text not null default '' check (length(path) <= 1024),
    add column more_subjects bigint not null default 0 check (more_subjects >= 0);

---- create above / drop below ----

alter table rl_events
    drop column more_subjects,
    drop column path,
    drop column team;
