-- security: an ordinary role that owns a schema full of shadowing functions and operators calls
-- every PUBLIC entry point with that schema first in its search_path, and again with it after
-- pg_catalog; a superuser runs the administration functions with the same paths. None of the
-- shadows may run (each records its call and tries to make the role a superuser).
SET client_min_messages = warning;
CREATE ROLE regress_mallory LOGIN NOSUPERUSER;
CREATE SCHEMA mallory AUTHORIZATION regress_mallory;
CREATE TABLE public.shadow_calls (fn text, by_user name DEFAULT current_user);
GRANT INSERT, SELECT ON public.shadow_calls TO PUBLIC;
CREATE FUNCTION public.shadow_hit(fn text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.shadow_calls (fn) VALUES (fn);
  BEGIN
    EXECUTE 'ALTER ROLE regress_mallory SUPERUSER';
  EXCEPTION WHEN others THEN NULL;
  END;
END $$;
-- state the entry points use: a tag, a custom layout
SELECT segment_create('sec', 10);
SELECT uid_layout_register('sec_layout', '2016-09-20Z', 29, 21, 13, unit_ms => 1000);
\c - regress_mallory
SET client_min_messages = warning;
-- the shadows: every function and operator the extension's statements use, with exact types
CREATE FUNCTION mallory.quote_ident(name) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('quote_ident(name)'); RETURN pg_catalog.quote_ident($1::text); END $$;
CREATE FUNCTION mallory.quote_ident(text) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('quote_ident(text)'); RETURN pg_catalog.quote_ident($1); END $$;
CREATE FUNCTION mallory.format(text) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('format(text)'); RETURN $1; END $$;
CREATE FUNCTION mallory.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('nextval'); RETURN pg_catalog.nextval($1); END $$;
CREATE FUNCTION mallory.setval(regclass, bigint, boolean) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('setval'); RETURN pg_catalog.setval($1, $2, $3); END $$;
CREATE FUNCTION mallory.to_regclass(text) RETURNS regclass LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('to_regclass'); RETURN pg_catalog.to_regclass($1); END $$;
CREATE FUNCTION mallory.pg_sequence_last_value(regclass) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('pg_sequence_last_value'); RETURN pg_catalog.pg_sequence_last_value($1); END $$;
CREATE FUNCTION mallory.now() RETURNS timestamptz LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('now'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION mallory.date_part(text, interval) RETURNS float8 LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('date_part(interval)'); RETURN pg_catalog.date_part($1, $2); END $$;
CREATE FUNCTION mallory.date_part(text, timestamptz) RETURNS float8 LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('date_part(timestamptz)'); RETURN pg_catalog.date_part($1, $2); END $$;
CREATE FUNCTION mallory.extract(text, timestamptz) RETURNS numeric LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('extract'); RETURN pg_catalog.extract($1, $2); END $$;
CREATE FUNCTION mallory.eq_text(text, text) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('=(text,text)'); RETURN pg_catalog.texteq($1, $2); END $$;
CREATE OPERATOR mallory.= (LEFTARG = text, RIGHTARG = text, FUNCTION = mallory.eq_text);
CREATE FUNCTION mallory.eq_name(name, name) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('=(name,name)'); RETURN pg_catalog.nameeq($1, $2); END $$;
CREATE OPERATOR mallory.= (LEFTARG = name, RIGHTARG = name, FUNCTION = mallory.eq_name);
CREATE FUNCTION mallory.eq_oid(oid, oid) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('=(oid,oid)'); RETURN pg_catalog.oideq($1, $2); END $$;
CREATE OPERATOR mallory.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = mallory.eq_oid);
CREATE FUNCTION mallory.mul_int8(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('*(bigint,bigint)'); RETURN pg_catalog.int8mul($1, $2); END $$;
CREATE OPERATOR mallory.* (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = mallory.mul_int8);
CREATE FUNCTION mallory.mul_int8_4(bigint, integer) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('*(bigint,integer)'); RETURN pg_catalog.int84mul($1, $2); END $$;
CREATE OPERATOR mallory.* (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = mallory.mul_int8_4);
CREATE FUNCTION mallory.mul_float(float8, integer) RETURNS float8 LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('*(float8,integer)'); RETURN $1 OPERATOR(pg_catalog.*) $2; END $$;
CREATE OPERATOR mallory.* (LEFTARG = float8, RIGHTARG = integer, FUNCTION = mallory.mul_float);
CREATE FUNCTION mallory.mul_numeric(numeric, integer) RETURNS numeric LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('*(numeric,integer)'); RETURN $1 OPERATOR(pg_catalog.*) $2; END $$;
CREATE OPERATOR mallory.* (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = mallory.mul_numeric);
CREATE FUNCTION mallory.add_int8(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('+(bigint,bigint)'); RETURN pg_catalog.int8pl($1, $2); END $$;
CREATE OPERATOR mallory.+ (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = mallory.add_int8);
CREATE FUNCTION mallory.add_int4_8(integer, bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('+(integer,bigint)'); RETURN pg_catalog.int48pl($1, $2); END $$;
CREATE OPERATOR mallory.+ (LEFTARG = integer, RIGHTARG = bigint, FUNCTION = mallory.add_int4_8);
CREATE FUNCTION mallory.sub_int8(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('-(bigint,bigint)'); RETURN pg_catalog.int8mi($1, $2); END $$;
CREATE OPERATOR mallory.- (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = mallory.sub_int8);
CREATE FUNCTION mallory.gt_int8(bigint, bigint) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('>(bigint,bigint)'); RETURN pg_catalog.int8gt($1, $2); END $$;
CREATE OPERATOR mallory.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = mallory.gt_int8);
-- shadows of what uid_migrate_key uses, and a table of mallory's own to convert (the new
-- DEFAULT names the extension's schema: public.snowflake_next(), whatever the path)
CREATE FUNCTION mallory.pg_get_expr(pg_node_tree, oid) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('pg_get_expr'); RETURN pg_catalog.pg_get_expr($1, $2); END $$;
CREATE FUNCTION mallory.pg_has_role(name, oid, text) RETURNS boolean LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('pg_has_role'); RETURN true; END $$;
CREATE FUNCTION mallory.format(text, text) RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('format(text,text)'); RETURN pg_catalog.format($1, $2); END $$;
CREATE FUNCTION mallory.max_sfunc(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('max(bigint)'); RETURN pg_catalog.int8larger($1, $2); END $$;
CREATE AGGREGATE mallory.max(bigint) (SFUNC = mallory.max_sfunc, STYPE = bigint);
CREATE FUNCTION mallory.ge_int8(bigint, bigint) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('>=(bigint,bigint)'); RETURN pg_catalog.int8ge($1, $2); END $$;
CREATE OPERATOR mallory.>= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = mallory.ge_int8);
CREATE FUNCTION mallory.ne_text(text, text) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN PERFORM public.shadow_hit('<>(text,text)'); RETURN pg_catalog.textne($1, $2); END $$;
CREATE OPERATOR mallory.<> (LEFTARG = text, RIGHTARG = text, FUNCTION = mallory.ne_text);
CREATE TABLE mallory.m_evil (id bigserial PRIMARY KEY, v text);
INSERT INTO mallory.m_evil (v) VALUES ('a'), ('b');
-- every PUBLIC entry point, in a fresh session (cold caches), shadows first
\c - regress_mallory
SET client_min_messages = warning;
SET search_path = mallory, pg_catalog, public;
SELECT snowflake_next() > 0 AS generated;
SELECT snowflake_next_text()::bigint > 0 AS generated_text;
SELECT count(*) > 0 AS has_stats FROM snowflake_stats();
SELECT name FROM snowflake_layout();
SELECT worker_id, source FROM snowflake_worker();
SELECT mode, state FROM snowflake_lease();
SELECT ts, worker_id, sequence FROM uid_decode(117809695279812608);
SELECT * FROM uid_decode(7011234567890123456, 'sec_layout');
SELECT snowflake_at('2026-06-01Z') > 0, snowflake_at('2026-06-01Z', 3, 'twitter') > 0;
SELECT uid_compose('2026-06-01Z', 1, 2), uid_compose('2026-06-01Z', 1, 2, 'sec_layout');
SELECT count(*) FROM uid_layouts();
SELECT * FROM uid_migrate_key('m_evil', 'id', dry_run => true);
SELECT * FROM uid_migrate_key('m_evil', 'id');
SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS m_evil_default FROM pg_catalog.pg_attrdef d
 WHERE d.adrelid OPERATOR(pg_catalog.=) 'mallory.m_evil'::pg_catalog.regclass;
SELECT regress_sqlstate_of($$SELECT * FROM uid_migrate_key('public.shadow_calls', 'fn')$$);
SELECT segment_next('sec'), segment_next('sec');
SELECT tag, step, persisted_hwm, values_issued FROM segment_status;
SELECT regress_sqlstate_of($$SELECT segment_create('mine')$$);
SELECT regress_sqlstate_of($$SELECT segment_set('sec', 1000)$$);
SELECT regress_sqlstate_of($$SELECT segment_drop('sec')$$);
SELECT regress_sqlstate_of($$SELECT set_worker_id(5)$$);
SELECT regress_sqlstate_of($$SELECT clear_worker_id()$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_register('mine', now(), 41, 10, 12)$$);
SELECT regress_sqlstate_of($$SELECT uid_layout_drop('sec_layout')$$);
SELECT regress_sqlstate_of($$SELECT snowflake_accept_layout()$$);
SELECT regress_sqlstate_of($$SELECT pg_idgen_catalog_changed()$$);
SELECT count(*) AS shadow_calls FROM public.shadow_calls;
-- again in a fresh session, shadows after pg_catalog (an exact type match beats a cast)
\c - regress_mallory
SET client_min_messages = warning;
SET search_path = pg_catalog, mallory, public;
SELECT snowflake_next() > 0 AS generated;
SELECT * FROM uid_decode(7011234567890123456, 'sec_layout');
SELECT segment_next('sec');
SELECT tag, step, persisted_hwm, values_issued FROM segment_status;
SELECT count(*) FROM uid_layouts();
SELECT count(*) AS shadow_calls FROM public.shadow_calls;
-- a superuser with the hostile path: the administration functions run none of the shadows
\c - postgres
SET client_min_messages = warning;
SET search_path = mallory, pg_catalog, public;
SELECT segment_create('sec2', 5, nodes => 2, node_index => 1);
SELECT segment_next('sec2'), segment_next('sec2');
SELECT segment_set('sec2', 100);
SELECT segment_next('sec2');
SELECT tag, persisted_hwm FROM segment_status ORDER BY tag;
SELECT segment_drop('sec2');
SELECT segment_create('sec3', 10, min_step => 10, max_step => 40, target_interval => '1 minute');
SELECT segment_next('sec3');
SELECT segment_drop('sec3');
SELECT uid_layout_register('sec_layout2', '2016-09-20Z', 29, 21, 13, unit_ms => 1000);
SELECT uid_layout_drop('sec_layout2');
SELECT set_worker_id(9);
SELECT worker_id, source FROM snowflake_worker();
SELECT clear_worker_id();
SELECT snowflake_accept_layout();
SELECT regress_sqlstate_of($$SELECT pg_idgen_catalog_changed()$$);
-- the registry's slot functions (leases written by hand)
INSERT INTO pg_idgen_leases (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until)
VALUES (1, 1, 's1', 'h', 5432, 1, pg_catalog.now(), pg_catalog.now(), pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 hour'),
       (2, 1, 's2', 'h', 5432, 2, pg_catalog.now(), pg_catalog.now(), pg_catalog.now() OPERATOR(pg_catalog.+) interval '1 hour');
SELECT segment_registry_assign('sec_r', 4, '{1,2}');
SELECT * FROM segment_registry_rebalance('sec_r', 2, 1);
SELECT * FROM segment_registry_drain('sec_r', 1);
SELECT segment_registry_move('sec_r', 0, 1);
SELECT regress_sqlstate_of($$SELECT segment_create('sec_r', 10, slots => 4, registry => true)$$);
DELETE FROM pg_idgen_segment_owners;
DELETE FROM pg_idgen_leases;
SET search_path = pg_catalog, mallory, public;
SELECT segment_create('sec4');
SELECT segment_set('sec4', 50);
SELECT segment_drop('sec4');
SELECT set_worker_id(9);
SELECT clear_worker_id();
RESET search_path;
-- snowflake_stats: every worker id to superusers and pg_read_all_stats, only the caller's own
-- worker id to other roles (as pg_stat_statements)
SET pg_idgen.worker_id = 42;
SELECT snowflake_next() > 0 AS generated_as_42;
RESET pg_idgen.worker_id;
SELECT array_agg(worker_id ORDER BY worker_id) FILTER (WHERE worker_id IN (1, 42)) AS superuser_sees FROM snowflake_stats();
\c - regress_mallory
SELECT array_agg(worker_id ORDER BY worker_id) AS mallory_sees FROM snowflake_stats();
\c - postgres
GRANT pg_read_all_stats TO regress_mallory;
\c - regress_mallory
SELECT array_agg(worker_id ORDER BY worker_id) FILTER (WHERE worker_id IN (1, 42)) AS reader_sees FROM snowflake_stats();
\c - postgres
SET client_min_messages = warning;
REVOKE pg_read_all_stats FROM regress_mallory;
-- the owner of the extension's schema (here public, owned by pg_database_owner in a database
-- it owns) swaps schema names under a warm backend: no statement of the extension names a schema
-- or table of the caller's choosing, so its view is never read and it gains nothing
CREATE ROLE regress_dbo LOGIN;
CREATE DATABASE regress_dbo_db OWNER regress_dbo TEMPLATE template0;
\c regress_dbo_db postgres
SET client_min_messages = warning;
CREATE EXTENSION pg_idgen;
SELECT segment_create('t2', 5);
CREATE FUNCTION pg_temp_regress_sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN others THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$;
ALTER FUNCTION pg_temp_regress_sqlstate_of(text) SET SCHEMA pg_catalog;
\c regress_dbo_db regress_dbo
CREATE SCHEMA evil;
CREATE FUNCTION evil.pwn() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE WARNING 'pwn() running as %', current_user; EXECUTE 'ALTER ROLE regress_dbo SUPERUSER'; RETURN true; END $$;
CREATE VIEW evil.pg_idgen_segments AS
  SELECT 't2'::text AS tag, 'pg_catalog.pg_class'::regclass AS seq, 5 AS step, 5 AS unit, 1::bigint AS start,
         1 AS nodes, 0 AS node_index, NULL::int AS min_step, NULL::int AS max_step, NULL::interval AS target_interval
  WHERE evil.pwn();
SELECT tag, persisted_hwm FROM public.segment_persisted();
SELECT public.segment_next('t2');
BEGIN; ALTER SCHEMA public RENAME TO was_public; ALTER SCHEMA evil RENAME TO public; COMMIT;
SELECT tag, persisted_hwm FROM was_public.segment_persisted();
SELECT was_public.segment_next('t2');
SELECT pg_catalog.pg_temp_regress_sqlstate_of($$SELECT was_public.segment_next('no_such_tag')$$);
SELECT count(*) FROM was_public.uid_layouts();
SELECT worker_id, source FROM was_public.snowflake_worker();
-- the schema owner can drop a backing sequence (not an extension member): a clean error, and the
-- status view keeps working, never XX000
DROP SEQUENCE was_public.pg_idgen_seg_1;
SELECT left(pg_catalog.pg_temp_regress_sqlstate_of($$SELECT count(was_public.segment_next('t2')) FROM generate_series(1, 20)$$), 5) AS sqlstate;
SELECT tag, persisted_hwm FROM was_public.segment_status;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_dbo';
\c pg_idgen_regress postgres
SET client_min_messages = warning;
DROP DATABASE regress_dbo_db;
DROP ROLE regress_dbo;
-- nothing ran, nobody gained anything
SELECT count(*) AS shadow_calls FROM public.shadow_calls;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_mallory';
SELECT segment_drop('sec');
SELECT uid_layout_drop('sec_layout');
DROP SCHEMA mallory CASCADE;
DROP TABLE public.shadow_calls;
DROP FUNCTION public.shadow_hit(text);
DROP ROLE regress_mallory;
