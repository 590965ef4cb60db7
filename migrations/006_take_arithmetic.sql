-- rl_take's arithmetic, written once. Up to 005, rl_take decided a call
-- twice over: inline in its one-call path and again in its batch path. From
-- here both paths hand the counts they lock to rl_take_decide, which decides
-- every call (fits, all or nothing, room per gate, counts after); rl_take's
-- signature and results are unchanged.
--
-- The bodies live in tern shared templates (migrations/shared/), so that a
-- migration replacing one of them can restore the one before in its
-- rollback without copying it: this one restores 002's rl_take, the version
-- every database ran until now.
{{ template "shared/rl_take_006.sql" . }}

---- create above / drop below ----

{{ template "shared/rl_take_002.sql" . }}

drop function rl_take_decide(int[], bigint[], boolean[], bigint[], boolean[], int[], boolean[], bigint[], boolean[], bigint[], boolean[]);
