-- The snowflake SQL contract: generation in DEFAULTs, decoding, bounds, composing,
-- and every error message. The cluster runs the default layout with worker id 1.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;

-- the layout in force
SELECT name, spec, epoch, unit_ms, time_bits, worker_bits, sequence_bits,
       max_worker_id, max_sequence, time_field_ends
  FROM snowflake_layout();

-- DEFAULT snowflake_next(): multi-row INSERT, INSERT ... SELECT, RETURNING, prepared statements
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT snowflake_next(), ord serial, note text);
INSERT INTO orders (note) VALUES ('a'), ('b'), ('c');
INSERT INTO orders (note) SELECT 'n' || g FROM generate_series(1, 1000) g;
INSERT INTO orders (note) VALUES ('returning') RETURNING id > 0 AS positive;
PREPARE ins(text) AS INSERT INTO orders (note) VALUES ($1);
EXECUTE ins('p1');
EXECUTE ins('p2');
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids FROM orders;
-- ids follow insertion order and all carry worker id 1
SELECT bool_and(id > prev) AS increasing
  FROM (SELECT id, lag(id) OVER (ORDER BY ord) AS prev FROM orders) s WHERE prev IS NOT NULL;
SELECT DISTINCT d.worker_id FROM orders, LATERAL uid_decode(id) d;
-- decoded time is now, to the millisecond
SELECT bool_and(d.ts BETWEEN now() - interval '1 minute' AND clock_timestamp() + interval '2 seconds') AS ts_is_now,
       bool_and(date_trunc('milliseconds', d.ts) = d.ts) AS ms_precision
  FROM orders, LATERAL uid_decode(id) d;

-- decoding and composing fixed values
SELECT uid_compose('2026-06-01 12:34:56.789+00', 5, 17) AS id;
SELECT * FROM uid_decode(54910556208910353);
SELECT * FROM uid_decode(0);
SELECT * FROM uid_decode(9223372036854775807);
SELECT uid_compose(ts, worker_id, sequence) = 54910556208910353 AS inverse
  FROM uid_decode(54910556208910353);
-- the epoch is an instant: the session time zone does not move it
SET TimeZone = 'Asia/Shanghai';
SELECT uid_compose('2026-01-01 08:00:00+08', 0, 0) AS id_at_epoch;
SELECT ts FROM uid_decode(4194304);
RESET TimeZone;

-- snowflake_at: the smallest id of an instant (and worker)
SELECT snowflake_at('2026-06-01 12:34:56.789+00') AS at_ts,
       snowflake_at('2026-06-01 12:34:56.789+00', 5) AS at_ts_worker_5,
       snowflake_at('2026-06-01 12:34:56.7891+00') AS sub_ms_rounds_down,
       snowflake_at(NULL) IS NULL AS null_in_null_out;
SELECT count(*) AS rows_since_a_minute_ago FROM orders WHERE id >= snowflake_at(now() - interval '1 minute');
SELECT count(*) AS rows_in_the_future FROM orders WHERE id >= snowflake_at(clock_timestamp() + interval '1 minute');

-- statistics
SELECT worker_id, ids_issued >= 1006 AS counted, lead_ms < 2000 AS lead_bounded,
       reserved_until > now() - interval '1 minute' AS reserved, steps_back, exhaustions
  FROM snowflake_stats() WHERE worker_id = 1;

-- errors: decoding
SELECT * FROM uid_decode(-1);
SELECT regress_sqlstate_of('SELECT uid_decode(-9223372036854775808)');
-- errors: composing
SELECT uid_compose('2026-06-01', 1024, 0);
SELECT uid_compose('2026-06-01', -1, 0);
SELECT uid_compose('2026-06-01', 1, 4096);
SELECT uid_compose('2026-06-01', 1, -1);
SELECT uid_compose('2025-12-31 23:59:59.999+00', 1, 0);
SELECT uid_compose('2096-01-01', 1, 0);
SELECT uid_compose('infinity', 1, 0);
SELECT snowflake_at('2026-01-01', 1024);
SELECT regress_sqlstate_of($$SELECT uid_compose('2026-06-01', 1024, 0)$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('2025-06-01', 0, 0)$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('infinity', 0, 0)$$);

-- errors: settings
SET pg_idgen.worker_id = 1024;
SET pg_idgen.worker_id = -2;
SET pg_idgen.sequence_start = 'sometimes';
SET pg_idgen.layout = 'twitter';
SET pg_idgen.max_drift_ms = 10;
SET pg_idgen.no_such_setting = 1;
SELECT regress_sqlstate_of('SET pg_idgen.worker_id = 1024');
SELECT regress_sqlstate_of('SET pg_idgen.no_such_setting = 1');
-- a worker id that is not set is an error, never a silent 0
SET pg_idgen.worker_id = -1;
SELECT snowflake_next();
SELECT regress_sqlstate_of('SELECT snowflake_next()');
RESET pg_idgen.worker_id;
SHOW pg_idgen.worker_id;
-- the other worker ids of this server get their own generator state
SET pg_idgen.worker_id = 1023;
SELECT worker_id FROM uid_decode(snowflake_next());
RESET pg_idgen.worker_id;

-- privileges: generation and decoding for everyone, configuration for superusers
CREATE ROLE idgen_regress_user;
SET ROLE idgen_regress_user;
SELECT snowflake_next() > 0 AS anyone_generates;
SELECT worker_id FROM uid_decode(4194304 * 5 + 4096 * 3);
SET pg_idgen.worker_id = 2;
SELECT snowflake_accept_layout();
SELECT regress_sqlstate_of('SELECT snowflake_accept_layout()');
RESET ROLE;
DROP ROLE idgen_regress_user;
-- the layout matches the persisted state, so there is nothing to confirm
SELECT snowflake_accept_layout() AS layout_had_changed;

DROP TABLE orders;
-- volatility: the forms without a layout are IMMUTABLE (constant-folded: partition pruning and
-- postgres_fdw see the bounds; usable in index expressions), those taking a layout STABLE (custom
-- layouts live in a table). snowflake_accept_layout() names the indexes to rebuild.
SELECT p.proname, p.pronargs, p.provolatile FROM pg_proc p
 WHERE p.proname IN ('uid_decode', 'snowflake_at', 'uid_compose') ORDER BY 1, 2;
CREATE TABLE vol_log (id bigint) PARTITION BY RANGE (id);
CREATE TABLE vol_log_2026 PARTITION OF vol_log FOR VALUES FROM (snowflake_at('2026-01-01Z')) TO (snowflake_at('2027-01-01Z'));
CREATE INDEX vol_log_2026_expr ON vol_log_2026 ((uid_compose('2026-06-01Z', 1, 0) OPERATOR(pg_catalog.+) id));
SELECT regress_sqlstate_of($$CREATE INDEX ON vol_log_2026 ((snowflake_at('2026-06-01Z', 1, 'twitter') OPERATOR(pg_catalog.+) id))$$);
SET client_min_messages = warning;
SELECT snowflake_accept_layout();
RESET client_min_messages;
DROP TABLE vol_log;
-- uid_decode is a plain function returning one uid_parts value, not a set: every form, with the
-- same columns; attributes unchanged (server layout IMMUTABLE, a named layout STABLE; STRICT,
-- PARALLEL SAFE), no ROWS estimate, not a set-returning function
SELECT p.oid::regprocedure AS function, p.prorettype::regtype AS returns, p.proretset,
       p.provolatile, p.proisstrict, p.proparallel, p.prorows
  FROM pg_proc p WHERE p.proname = 'uid_decode' ORDER BY p.pronargs;
SELECT attname, atttypid::regtype FROM pg_attribute
 WHERE attrelid = 'uid_parts'::regclass AND attnum > 0 ORDER BY attnum;
SELECT (uid_decode(117809695279812608)).*;
SELECT (uid_decode(117809695279812608, 'server')).*;
SELECT (uid_decode(uid_compose('2023-05-01 10:00:00.123+00', (3 << 5) | 17, 99, 'twitter'), 'twitter')).*;
SELECT * FROM uid_decode(117809695279812608);
SELECT (uid_decode(117809695279812608)).ts, (uid_decode(184269081482247, 'js53')).worker_id;
SELECT uid_decode(117809695279812608) AS parts;
SELECT uid_decode(NULL) IS NULL AS strict_null, uid_decode(1, NULL) IS NULL AS strict_null_layout;
CREATE TABLE dec_t (id bigint PRIMARY KEY, note text);
INSERT INTO dec_t SELECT uid_compose('2026-06-01Z'::timestamptz + g * interval '1 second', g % 1024, g % 4096), 'n' || g
  FROM generate_series(1, 1000) g;
ANALYZE dec_t;
-- FROM t, uid_decode(t.id): one row per input row, estimated so (an SRF would be 1000 x)
EXPLAIN (COSTS OFF) SELECT * FROM dec_t, uid_decode(dec_t.id) d;
SELECT (regexp_match(j::text, '"Plan Rows": ([0-9]+)'))[1]::int AS top_plan_rows
  FROM (SELECT regress_explain_json($$SELECT * FROM dec_t, uid_decode(dec_t.id) d$$) j) x;
SELECT (regexp_match(j::text, '"Plan Rows": ([0-9]+)'))[1]::int AS top_plan_rows_layout
  FROM (SELECT regress_explain_json($$SELECT * FROM dec_t t, uid_decode(t.id, 'twitter') d$$) j) x;
SELECT count(*), count(DISTINCT d.worker_id), min(d.ts), max(d.ts) FROM dec_t, uid_decode(dec_t.id) d;
-- in RETURNING, and in a select list with .*
CREATE TABLE dec_ins (id bigint PRIMARY KEY DEFAULT snowflake_next(), v int);
INSERT INTO dec_ins (v) VALUES (1), (2) RETURNING v, (uid_decode(id)).worker_id, (uid_decode(id)).ts <= now() + interval '2 seconds' AS ts_ok;
INSERT INTO dec_ins (id, v) VALUES (uid_compose('2026-07-01Z', 3, 4), 3) RETURNING (uid_decode(id)).*;
SELECT v, (uid_decode(id)).* FROM dec_ins WHERE v = 3;
DROP TABLE dec_t, dec_ins;
-- snowflake_next_text(): the next id as decimal text (for JSON payloads), the same generator
SELECT snowflake_next() AS before_text \gset
SELECT snowflake_next_text() AS id_text \gset
SELECT :'id_text' ~ '^[1-9][0-9]{0,18}$' AS decimal_text,
       :'id_text'::bigint > :before_text AS after_the_previous_id,
       (uid_decode(:'id_text'::bigint)).worker_id AS worker_id,
       pg_typeof(snowflake_next_text()) AS type;
SELECT json_build_object('id', snowflake_next_text())::text ~ '^\{"id" : "[1-9][0-9]*"\}$' AS json_string;
SELECT p.provolatile, p.proparallel, p.proisstrict FROM pg_proc p WHERE p.proname = 'snowflake_next_text';
-- a literal without an offset is read in the session's TimeZone (docs/snowflake-ids.md: give instants with an
-- offset): in Europe/Berlin '2026-11-01' is 2026-10-31 23:00 UTC; with the offset it is not
SET TimeZone = 'Europe/Berlin';
SELECT snowflake_at('2026-11-01') = snowflake_at('2026-10-31 23:00+00') AS naive_is_berlin_midnight,
       snowflake_at('2026-11-01 00:00+00') = snowflake_at('2026-11-01T00:00:00Z') AS offset_is_utc,
       snowflake_at('2026-11-01') <> snowflake_at('2026-11-01 00:00+00') AS they_differ;
RESET TimeZone;
-- the library keeps the 0.1.0 symbols of uid_decode (set-returning, no SQL generated for them):
-- a database still on version 0.1.0 decodes until ALTER EXTENSION pg_idgen UPDATE
CREATE FUNCTION regress_decode_010(id bigint) RETURNS TABLE (ts timestamptz, worker_id int, sequence int)
    IMMUTABLE STRICT LANGUAGE c AS '$libdir/pg_idgen', 'uid_decode_wrapper';
CREATE FUNCTION regress_decode_010(id bigint, layout text)
    RETURNS TABLE (ts timestamptz, worker_id int, sequence int, worker_high int, worker_low int)
    STABLE STRICT LANGUAGE c AS '$libdir/pg_idgen', 'uid_decode_layout_wrapper';
SELECT * FROM regress_decode_010(117809695279812608);
SELECT * FROM regress_decode_010(uid_compose('2023-05-01 10:00:00.123+00', (3 << 5) | 17, 99, 'twitter'), 'twitter');
SELECT regress_sqlstate_of($$SELECT * FROM regress_decode_010(-1)$$);
DROP FUNCTION regress_decode_010(bigint), regress_decode_010(bigint, text);
