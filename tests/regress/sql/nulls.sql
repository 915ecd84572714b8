-- nulls: every SQL function of the extension with NULL in each argument position, then extreme
-- values. Each call runs in a subtransaction that is rolled back; the result is 'null' (STRICT:
-- NULL in, NULL out), 'value', or the SQLSTATE. Never XX000, never panic or backtrace text.
SET client_min_messages = warning;
SELECT segment_create('nulls_tag', 10);
CREATE TABLE null_calls (fn text, pos int, outcome text, message text, detail text);
-- a sensible value for each argument, by name then type, so that the NULL is what is tested
CREATE FUNCTION sample_value(t regtype, n text) RETURNS text LANGUAGE sql AS $$
  SELECT CASE
    WHEN n = 'generator' THEN '''segment''::text'
    WHEN n = 'kind' THEN '''keyed''::text'
    WHEN n = 'system_identifier' THEN '''1''::text'
    WHEN t = 'regclass'::regtype THEN '''null_calls''::regclass'
    WHEN t = 'name'::regtype THEN '''fn''::name'
    WHEN n = 'layout' THEN '''twitter''::text'
    WHEN n = 'field_order' THEN '''worker_sequence''::text'
    WHEN n = 'name' THEN '''nulls_layout''::text'
    WHEN n = 'node_index' THEN '0::integer'
    WHEN n = 'worker_low_bits' THEN '5::integer'
    WHEN n IN ('step', 'min_step', 'max_step') THEN '10::integer'
    WHEN n = 'time_bits' THEN '41::integer'
    WHEN n = 'worker_bits' THEN '10::integer'
    WHEN n = 'sequence_bits' THEN '12::integer'
    WHEN t = 'bigint'::regtype THEN '117809695279812608::bigint'
    WHEN t = 'integer'::regtype THEN '1::integer'
    WHEN t = 'text'::regtype THEN '''nulls_tag''::text'
    WHEN t = 'timestamp with time zone'::regtype THEN '''2026-06-01Z''::timestamptz'
    WHEN t = 'interval'::regtype THEN '''1 minute''::interval'
    WHEN t = 'bytea'::regtype THEN 'pg_catalog.decode(pg_catalog.repeat(''00'', 32), ''hex'')'
    WHEN t = 'integer[]'::regtype THEN '''{0,1,1,0,1,0,0,1,1,0}''::integer[]'
    WHEN t = 'bigint[]'::regtype THEN '''{1,1,1,1,1,1,1,1,1,1}''::bigint[]'
    WHEN t = 'oid'::regtype THEN '1::oid'
    WHEN t = 'oid[]'::regtype THEN '''{1}''::oid[]'
    WHEN t = 'boolean'::regtype THEN 'true'
    WHEN t = 'double precision'::regtype THEN '6::double precision'
    WHEN t = 'numeric'::regtype THEN '1::numeric'
  END $$;
DO $$
DECLARE
  f record; i int; args text; r text; st text; msg text; det text;
BEGIN
  FOR f IN
    SELECT p.oid, p.proname, p.proargtypes::regtype[] AS types, p.proargnames AS names, p.pronargs
    FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
    JOIN pg_extension e ON e.oid = d.refobjid AND d.deptype = 'e'
    WHERE e.extname = 'pg_idgen' AND p.prorettype <> 'trigger'::regtype AND p.pronargs > 0
      -- a type's binary input (internal): not callable from SQL, refused by the server itself with
      -- a code that differs between majors (0A000 before 18, 42846 on 18)
      AND NOT 'internal'::regtype = ANY (p.proargtypes::regtype[])
    ORDER BY p.proname, p.pronargs
  LOOP
    FOR i IN 1 .. f.pronargs LOOP
      SELECT string_agg(CASE WHEN k = i THEN 'NULL::' || format_type(t, NULL) ELSE sample_value(t, f.names[k]) END, ', ' ORDER BY k)
        INTO args FROM unnest(f.types) WITH ORDINALITY AS u(t, k);
      BEGIN
        EXECUTE format('SELECT (%s(%s))::text', f.proname, args) INTO r;
        RAISE EXCEPTION USING ERRCODE = 'P0001', MESSAGE = coalesce('value', r);
      EXCEPTION WHEN others THEN
        GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
        IF st = 'P0001' THEN
          INSERT INTO null_calls VALUES (f.proname || '(' || array_to_string(f.types, ', ') || ')', i,
            CASE WHEN r IS NULL THEN 'null' ELSE 'value' END, NULL, NULL);
        ELSE
          INSERT INTO null_calls VALUES (f.proname || '(' || array_to_string(f.types, ', ') || ')', i, st, msg, det);
        END IF;
      END;
    END LOOP;
  END LOOP;
END $$;
SELECT fn, pos, outcome, message FROM null_calls ORDER BY fn, pos;
-- the invariant, whatever the list above says
SELECT count(*) AS internal_errors FROM null_calls
 WHERE outcome = 'XX000' OR coalesce(message, '') || coalesce(detail, '') ~* 'panic|backtrace|\.rs:|unwrap';
-- extremes
SELECT regress_sqlstate_of($$SELECT uid_decode(-9223372036854775808)$$);
SELECT regress_sqlstate_of($$SELECT uid_decode(9223372036854775807)$$);
SELECT regress_sqlstate_of($$SELECT uid_decode(9223372036854775807, 'discord')$$);
SELECT regress_sqlstate_of($$SELECT uid_decode(-1, 'discord')$$);
SELECT regress_sqlstate_of($$SELECT uid_decode(9223372036854775807, 'baidu')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('infinity')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('-infinity')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('294276-12-31 23:59:59Z')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('4713-01-01 BC')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('2026-06-01Z', 2147483647)$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('2026-06-01Z', -2147483648, 'twitter')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_at('2026-06-01Z', 1, repeat('x', 1000000))$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('2026-06-01Z', 2147483647, 2147483647)$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('2026-06-01Z', 1, -2147483648)$$);
SELECT regress_sqlstate_of($$SELECT uid_compose('infinity', 1, 1, 'sonyflake')$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('w0', '2016-01-01Z', 0, 31, 32)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('w63', '2016-01-01Z', 63, 0, 0)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('w64', '2016-01-01Z', 64, 0, 0)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('wneg', '2016-01-01Z', -1, 32, 32)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('wbig', '2016-01-01Z', 2147483647, 10, 12)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('unit0', '2016-01-01Z', 41, 10, 12, unit_ms => 0)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('unitmax', '2016-01-01Z', 41, 10, 12, unit_ms => 2147483647)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('einf', 'infinity', 41, 10, 12)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register(repeat('a', 1000), '2016-01-01Z', 41, 10, 12)$$);
-- a custom layout whose time reaches past timestamptz: an error, never a truncated time
SELECT uid_layout_register('longunit', '2016-01-01Z', 41, 10, 12, unit_ms => 86400000);
SELECT regress_sqlstate_of($$SELECT uid_decode(9223372036854775807, 'longunit')$$);
SELECT uid_layout_drop('longunit');
SELECT regress_sqlstate_of($$SELECT segment_create('x1', 0)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('x2', 2147483647)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('x3', 10, 9223372036854775807)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('x4', 10, -9223372036854775808)$$);
SELECT segment_next('x4'), segment_drop('x4');
SELECT regress_sqlstate_of($$SELECT segment_create('x5', 10, nodes => 2147483647)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('x6', 10, nodes => 0)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('x7', 10, nodes => 2, node_index => 2147483647)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('x8', 10, min_step => 10, max_step => 2147483647, target_interval => '1 minute')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('x9', 10, min_step => 10, max_step => 20, target_interval => '-1 minute')$$);
SELECT regress_sqlstate_of($$SELECT segment_create(repeat('t', 64))$$);
SELECT regress_sqlstate_of($$SELECT segment_create('')$$);
SELECT regress_sqlstate_of($$SELECT segment_next(repeat('t', 10000000))$$);
SELECT regress_sqlstate_of($$SELECT segment_next('')$$);
SELECT regress_sqlstate_of($$SELECT segment_set('nulls_tag', 9223372036854775807)$$);
SELECT regress_sqlstate_of($$SELECT segment_set('nulls_tag', -9223372036854775808)$$);
SELECT regress_sqlstate_of($$SELECT set_worker_id(2147483647)$$);
SELECT regress_sqlstate_of($$SELECT set_worker_id(-2147483648)$$);
-- a tag near the end of bigint: hands out what is left, then 2200H, never XX000
SELECT segment_create('nearmax', 10, 9223372036854775790);
SELECT segment_next('nearmax') FROM generate_series(1, 10);
SELECT regress_sqlstate_of($$SELECT segment_next('nearmax')$$);
SELECT segment_drop('nearmax');
SELECT segment_drop('nulls_tag');
DROP TABLE null_calls;
DROP FUNCTION sample_value(regtype, text);
-- text arguments are UTF-8: the extension refuses a database of another encoding at CREATE
-- EXTENSION (0A000) rather than failing call by call on text that is not UTF-8
CREATE DATABASE regress_ascii_db ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c regress_ascii_db
SET client_min_messages = warning;
\set VERBOSITY terse
CREATE EXTENSION pg_idgen;
\c pg_idgen_regress
SET client_min_messages = warning;
DROP DATABASE regress_ascii_db;
