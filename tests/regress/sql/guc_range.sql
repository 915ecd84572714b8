-- guc_range: PostgreSQL's own message for a setting with a unit set out of range. Its wording
-- depends on the PostgreSQL major: 15 and 16 print the bounds without the unit
-- ("(0 .. 60000)"), 17 and 18 print the unit with each bound ("(0 ms .. 60000 ms)"). The only
-- message that differs between 15 and 18, so it lives here with its alternatives:
-- expected/guc_range.out (15, 16) and expected/guc_range_1.out (17, 18); pg_regress accepts either.
SET pg_idgen.max_wait_ms = -1;
SET pg_idgen.max_wait_ms = 60001;
SET pg_idgen.max_wait_ms = 250;
SHOW pg_idgen.max_wait_ms;
