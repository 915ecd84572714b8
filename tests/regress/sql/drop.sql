-- drop: DROP EXTENSION pg_idgen leaves nothing behind, created, used and dropped three times in a
-- database of its own; it refuses (2BP01, naming what depends on it) while a table's DEFAULT
-- uses the extension.
SET client_min_messages = warning;
SELECT current_database() AS regress_home \gset
CREATE DATABASE regress_drop;
\c regress_drop
SET client_min_messages = warning;
-- Every object of the database by name (temporary schemas aside), and the sizes of the catalogs
-- that hold no names: dependencies, comments, initial privileges of extension objects, sequences.
CREATE FUNCTION regress_objects() RETURNS SETOF text LANGUAGE sql AS $$
    SELECT 'relation ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname !~ '^pg_(toast_)?temp'
    UNION ALL SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p
    UNION ALL SELECT 'type ' || t.oid::regtype::text
      FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE n.nspname !~ '^pg_(toast_)?temp'
    UNION ALL SELECT 'trigger ' || t.tgname FROM pg_trigger t
    UNION ALL SELECT 'event trigger ' || e.evtname FROM pg_event_trigger e
    UNION ALL SELECT 'extension ' || x.extname FROM pg_extension x
    UNION ALL SELECT 'schema ' || n.nspname FROM pg_namespace n WHERE n.nspname !~ '^pg_(toast_)?temp'
    UNION ALL SELECT 'pg_depend rows ' || count(*) FROM pg_depend
    UNION ALL SELECT 'pg_description rows ' || count(*) FROM pg_description
    UNION ALL SELECT 'pg_init_privs rows ' || count(*) FROM pg_init_privs
    UNION ALL SELECT 'pg_sequence rows ' || count(*) FROM pg_sequence
$$;
-- one cycle per call: install, use every kind of state (worker id, layout, plain and strided
-- tags with values handed out, a mask key, a table whose DEFAULTs use it), drop
CREATE PROCEDURE regress_cycle(i int) LANGUAGE plpgsql AS $$
BEGIN
    CREATE EXTENSION pg_idgen;
    COMMIT;
    PERFORM set_worker_id(3);
    PERFORM uid_layout_register('cycle_' || i, now(), 41, 10, 12);
    PERFORM segment_create('plain_' || i, 10);
    PERFORM segment_create('strided_' || i, 50, nodes => 2, node_index => 1);
    PERFORM uid_mask_key_create('key_' || i);
    COMMIT;
    PERFORM segment_next('plain_' || i), segment_next('strided_' || i), snowflake_next();
    EXECUTE format('CREATE TABLE regress_keys (id bigint DEFAULT snowflake_next(), no bigint DEFAULT segment_next(%L))', 'plain_' || i);
    INSERT INTO regress_keys DEFAULT VALUES;
    COMMIT;
    DROP TABLE regress_keys;
    DROP EXTENSION pg_idgen;
    COMMIT;
END
$$;
CREATE FUNCTION regress_sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN others THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $$;
CREATE TABLE regress_before (o text);
INSERT INTO regress_before SELECT o FROM regress_objects() o;
CALL regress_cycle(1);
CALL regress_cycle(2);
CALL regress_cycle(3);
-- nothing more, nothing less than before
SELECT 'left behind' AS what, o FROM (SELECT o FROM regress_objects() o EXCEPT SELECT o FROM regress_before) s
UNION ALL
SELECT 'missing', o FROM (SELECT o FROM regress_before EXCEPT SELECT o FROM regress_objects() o) s
ORDER BY 1, 2;
-- a tag dropped with the extension and created again in the same transaction is not served
-- what the first one reserved
BEGIN;
CREATE EXTENSION pg_idgen;
SELECT segment_create('same_xact', 10);
SELECT segment_next('same_xact');
DROP EXTENSION pg_idgen;
CREATE EXTENSION pg_idgen;
SELECT segment_create('same_xact', 10, start => 1000);
SELECT string_agg(segment_next('same_xact')::text, ',') FROM generate_series(1, 3) AS recreated;
COMMIT;
-- rows as pg_restore loads them: a tag whose sequence is gone (its owner dropped it) gets a
-- WARNING and the others are still linked; a sequence another role made, or one another tag
-- uses, is refused with the tag named
SELECT segment_create('kept', 10);
INSERT INTO pg_idgen_segments (tag, seq, step, unit, start) VALUES ('lost', 4000000000::oid::regclass, 10, 10, 1);
SELECT regress_sqlstate_of($$SELECT segment_next('lost')$$) AS lost;
CREATE ROLE regress_drop_intruder;
CREATE SEQUENCE pg_idgen_seg_99;
ALTER SEQUENCE pg_idgen_seg_99 OWNER TO regress_drop_intruder;
INSERT INTO pg_idgen_segments (tag, seq, step, unit, start) VALUES ('adopt', 'pg_idgen_seg_99', 10, 10, 1);
INSERT INTO pg_idgen_segments (tag, seq, step, unit, start)
    SELECT 'twin', seq, step, unit, start FROM pg_idgen_segments WHERE tag = 'kept';
DROP SEQUENCE pg_idgen_seg_99;
DROP ROLE regress_drop_intruder;
SELECT tag, (SELECT count(*) FROM pg_depend d WHERE d.objid = s.seq AND d.deptype = 'a') AS owned
  FROM pg_idgen_segments s ORDER BY tag;
DROP EXTENSION pg_idgen;
-- refused while a table's DEFAULT uses it, with what depends on it and the way out
CREATE EXTENSION pg_idgen;
SELECT segment_create('refuse', 10);
CREATE TABLE regress_keys (id bigint DEFAULT snowflake_next(), no bigint DEFAULT segment_next('refuse'));
DROP EXTENSION pg_idgen;
\echo :LAST_ERROR_SQLSTATE
DROP TABLE regress_keys;
DROP EXTENSION pg_idgen;
SELECT count(*) AS pg_idgen_relations FROM pg_class WHERE relname LIKE 'pg\_idgen%';
\c :regress_home
DROP DATABASE regress_drop;
