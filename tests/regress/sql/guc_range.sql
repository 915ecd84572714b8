-- guc_range: PostgreSQL's own message for a setting with a unit set out of range. Its wording
-- depends on the PostgreSQL major: 15 prints the bounds without the unit ("(0 .. 60000)"),
-- newer majors print the unit with each bound ("(0 ms .. 60000 ms)"). The only message that
-- differs between 15 and 18, so it lives here with its alternatives: expected/guc_range.out
-- (15) and expected/guc_range_1.out (newer majors); pg_regress accepts either.
SET pg_idgen.max_wait_ms = -1;
SET pg_idgen.max_wait_ms = 60001;
SET pg_idgen.max_wait_ms = 250;
SHOW pg_idgen.max_wait_ms;
