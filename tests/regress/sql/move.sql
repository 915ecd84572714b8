-- moving to a new cluster: pg_idgen_state_export() / pg_idgen_state_import(state), and the type of
-- the columns naming a backing sequence (pg_idgen_regclass). The import is made into another
-- database of this cluster (the state of one database, carried to another); what the import does
-- across clusters under load is tests/integration/migrate/002_logical_move.sh.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;
-- pg_idgen_regclass: regclass outside logical replication workers
SELECT segment_create('mv_plain', 10);
SELECT pg_typeof(seq) AS type, seq::text LIKE 'pg_idgen_seg_%' AS named,
       seq::regclass::oid = seq::oid AS same_oid FROM pg_idgen_segments WHERE tag = 'mv_plain';
SELECT count(*) AS joined FROM pg_idgen_segments s JOIN pg_class c ON c.oid = s.seq WHERE s.tag = 'mv_plain';
\set VERBOSITY terse
SELECT 'pg_idgen_no_such_sequence'::pg_idgen_regclass;
SELECT '0'::pg_idgen_regclass::oid AS zero, '-'::pg_idgen_regclass::oid AS dash;
-- a session with a replication origin reads a missing name as 0 only where pg_idgen_replica_guard
-- then skips the row (session_replication_role = replica, as every apply worker); applying as
-- itself (role origin, the guard does not fire) it reads it as regclass does, so no row naming
-- OID 0 gets into pg_idgen's tables
SELECT pg_replication_origin_create('regress_move_origin') > 0 AS origin;
SELECT pg_replication_origin_session_setup('regress_move_origin');
SELECT 'pg_idgen_no_such_sequence'::pg_idgen_regclass::oid AS origin_role_origin;
SET session_replication_role = replica;
SELECT 'pg_idgen_no_such_sequence'::pg_idgen_regclass::oid AS origin_role_replica;
RESET session_replication_role;
SELECT pg_replication_origin_session_reset();
SELECT pg_replication_origin_drop('regress_move_origin');
-- the state of this database
SELECT segment_create('mv_strided', 10, nodes => 3, node_index => 2);
SELECT segment_create('mv_slotted', 10, slots => 4, owned => ARRAY[0, 3]);
SELECT keyed_create('mv_space', step => 10, section_size => 10);
CREATE ROLE regress_move_user;
SELECT keyed_grant('mv_space', 'regress_move_user');
SELECT uid_layout_register('mv_layout', '2024-01-01', 41, 10, 12);
SELECT uid_mask_key_create('mv_key');
SELECT count(segment_next('mv_plain')) + count(segment_next('mv_strided')) + count(segment_next('mv_slotted')) AS used
  FROM generate_series(1, 25);
SELECT count(keyed_next('mv_space', k)) AS used FROM generate_series(1, 30) k, generate_series(1, 3) r;
CREATE TABLE regress_move_state AS SELECT pg_idgen_state_export() AS s;
SELECT current_database() AS old_db \gset
SELECT jsonb_array_length(s -> 'segments') AS segments, jsonb_array_length(s -> 'keyed') AS spaces,
       jsonb_array_length(s -> 'keyed' -> 0 -> 'bounds') AS bounds,
       (SELECT string_agg(e ->> 'kind', ',' ORDER BY e ->> 'tag') FROM jsonb_array_elements(s -> 'segments') e) AS kinds,
       s -> 'keyed' -> 0 -> 'usage' AS usage
  FROM regress_move_state;
-- superusers only
SET ROLE regress_move_user;
SELECT pg_idgen_state_export();
SELECT * FROM pg_idgen_state_import('{}');
SELECT pg_idgen_snowflake_marks();
RESET ROLE;
-- not a state; this database's own state
SELECT * FROM pg_idgen_state_import('{"format": 2}');
SELECT * FROM pg_idgen_state_import((SELECT s FROM regress_move_state));
-- floors: only within an hour of the clock, worker ids of the layout
SELECT pg_idgen_snowflake_raise_floor(1, -1);
SELECT pg_idgen_snowflake_raise_floor(1, 9223372036854775807);
SELECT pg_idgen_snowflake_raise_floor(100000, 0);
SELECT pg_idgen_keyed_raise_bounds('mv_space', '{1,2,3}');
\set VERBOSITY default
SELECT s AS state FROM regress_move_state \gset
CREATE DATABASE regress_move_bad;
CREATE DATABASE regress_move_new;
-- a mask key of the same name made on the new side refuses the import, nothing is applied
\c regress_move_bad
SET client_min_messages = warning;
CREATE EXTENSION pg_idgen;
SELECT uid_mask_key_create('mv_key');
\set VERBOSITY terse
SELECT * FROM pg_idgen_state_import(:'state');
\set VERBOSITY default
SELECT (SELECT count(*) FROM pg_idgen_segments) + (SELECT count(*) FROM pg_idgen_keyed_spaces) AS generators;
\c regress_move_new
SET client_min_messages = warning;
CREATE EXTENSION pg_idgen;
CREATE TABLE st AS SELECT :'state'::jsonb AS s;
-- the import: everything created, each generator above the old database's values
CREATE TABLE done AS SELECT * FROM pg_idgen_state_import((SELECT s FROM st));
-- (the snowflake rows name the worker ids this cluster generated for, and times; earlier tests
-- left objects of their own in this database)
SELECT object, name, action FROM done WHERE object NOT IN ('snowflake', 'worker id') AND name LIKE 'mv\_%' ORDER BY 1, 2;
SELECT count(*) FILTER (WHERE name = 'floor') AS floor, count(*) FILTER (WHERE action NOT LIKE 'at or above %') AS other
  FROM done WHERE object = 'snowflake';
DROP TABLE done;
SELECT segment_next('mv_plain') AS plain, segment_next('mv_strided') AS strided,
       segment_next('mv_slotted') AS slotted, keyed_next('mv_space', 1) AS key_1, keyed_next('mv_space', 30) AS key_30;
SELECT tag, slot, owned FROM segment_slot_status WHERE tag = 'mv_slotted' ORDER BY slot;
SELECT has_sequence_privilege('regress_move_user', seq::regclass, 'USAGE') AS granted
  FROM pg_idgen_keyed_spaces WHERE space = 'mv_space';
SELECT fingerprint AS fp_here FROM uid_mask_keys WHERE name = 'mv_key' \gset
-- again: only raises, nothing moves
CREATE TABLE done AS SELECT * FROM pg_idgen_state_import((SELECT s FROM st));
-- (the snowflake rows name the worker ids this cluster generated for, and times; earlier tests
-- left objects of their own in this database)
SELECT object, name, action FROM done WHERE object NOT IN ('snowflake', 'worker id') AND name LIKE 'mv\_%' ORDER BY 1, 2;
SELECT count(*) FILTER (WHERE name = 'floor') AS floor, count(*) FILTER (WHERE action NOT LIKE 'at or above %') AS other
  FROM done WHERE object = 'snowflake';
DROP TABLE done;
-- a tag that differs refuses
SELECT segment_drop('mv_plain');
SELECT segment_create('mv_plain', 20);
\set VERBOSITY terse
SELECT * FROM pg_idgen_state_import((SELECT s FROM st));
-- a state whose tag lacks a field it is compared on (a crafted or damaged state) refuses too: a
-- missing value is not taken as equal
SELECT * FROM pg_idgen_state_import(jsonb_set((SELECT s FROM st), '{segments}',
    (SELECT jsonb_agg(CASE WHEN e->>'tag' = 'mv_plain' THEN e - 'unit' ELSE e END) FROM jsonb_array_elements((SELECT s FROM st)->'segments') e)));
\set VERBOSITY default
\c :old_db
SELECT fingerprint = :'fp_here' AS same_key_on_both FROM uid_mask_keys WHERE name = 'mv_key';
DROP DATABASE regress_move_new;
DROP DATABASE regress_move_bad;
DROP TABLE regress_move_state;
SELECT segment_drop(t) FROM unnest(ARRAY['mv_plain', 'mv_strided', 'mv_slotted']) t;
SELECT keyed_drop('mv_space');
SELECT uid_layout_drop('mv_layout');
DROP ROLE regress_move_user;
