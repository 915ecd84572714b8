-- what must not replicate: every table of pg_idgen carries the ENABLE REPLICA guard triggers and
-- a TRUNCATE guard (refused while a publication sends it, 55000); a
-- publication naming one of them is refused (22023), one covering them through FOR ALL TABLES or
-- TABLES IN SCHEMA is warned about; other publications and sessions with
-- session_replication_role = replica that are not applying from another node pass.
-- (The regress cluster has wal_level = replica: CREATE PUBLICATION also warns that it is
-- insufficient, in words that differ between majors; the CREATEs run with client_min_messages =
-- error and an ALTER of the publication, which checks it again, shows pg_idgen's WARNING.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;
-- every table of the extension has both guards, enabled for replica sessions only
SELECT c.relname,
       pg_catalog.string_agg(t.tgname || '=' || t.tgenabled::text, ', ' ORDER BY t.tgname) AS guards
  FROM pg_depend d
  JOIN pg_class c ON c.oid = d.objid AND c.relkind = 'r'
  LEFT JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname IN ('pg_idgen_replica_guard', 'pg_idgen_replica_guard_truncate', 'pg_idgen_publish_truncate_guard')
 WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_idgen')
 GROUP BY c.relname ORDER BY c.relname;
SELECT evtname, evtevent, evttags, evtenabled FROM pg_event_trigger WHERE evtname LIKE 'pg_idgen%';
CREATE TABLE repl_app (id bigint PRIMARY KEY, v text);
CREATE SCHEMA repl_app_schema;
CREATE TABLE repl_app_schema.t (id int PRIMARY KEY);
SET client_min_messages = error;
CREATE PUBLICATION repl_p FOR TABLE repl_app;
CREATE PUBLICATION repl_s FOR TABLES IN SCHEMA repl_app_schema;
-- a pg_idgen table named: refused, the publication not made
CREATE PUBLICATION repl_named FOR TABLE repl_app, pg_idgen_worker;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS repl_named FROM pg_publication WHERE pubname = 'repl_named';
-- FOR ALL TABLES and TABLES IN SCHEMA covering pg_idgen's tables: warned, made
CREATE PUBLICATION repl_all FOR ALL TABLES;
CREATE PUBLICATION repl_ext_schema FOR TABLES IN SCHEMA public;
SELECT pubname FROM pg_publication WHERE pubname IN ('repl_all', 'repl_ext_schema') ORDER BY 1;
SET client_min_messages = warning;
-- a TRUNCATE of a pg_idgen table that publications send is refused where it is made (55000)
TRUNCATE pg_idgen_registry_nodes;
\echo :LAST_ERROR_SQLSTATE
-- the application's tables: no message of pg_idgen
ALTER PUBLICATION repl_p SET (publish = 'insert, update, delete');
ALTER PUBLICATION repl_s SET (publish = 'insert, update, delete');
-- the WARNINGs of the two covering pg_idgen's tables (checked again at every ALTER)
\set VERBOSITY terse
ALTER PUBLICATION repl_ext_schema SET (publish = 'insert, update, delete');
\set VERBOSITY default
ALTER PUBLICATION repl_all SET (publish = 'insert, update, delete');
-- no publication sends its TRUNCATE any more: it passes
TRUNCATE pg_idgen_registry_nodes;
-- ALTER PUBLICATION: adding a pg_idgen table refused (the whole statement), by schema warned
ALTER PUBLICATION repl_p ADD TABLE pg_idgen_segments, pg_idgen_layouts;
SELECT tablename FROM pg_publication_tables WHERE pubname = 'repl_p' ORDER BY 1;
ALTER PUBLICATION repl_s ADD TABLES IN SCHEMA public;
ALTER PUBLICATION repl_s DROP TABLES IN SCHEMA public;
-- unrelated changes of a publication pass
ALTER PUBLICATION repl_p SET (publish = 'insert, update');
ALTER PUBLICATION repl_p RENAME TO repl_p2;
-- a role that is not superuser, with CREATE on the database: its own table passes; a pg_idgen
-- table is PostgreSQL's refusal (not the owner), before the event trigger runs
CREATE ROLE repl_alice;
GRANT CREATE ON DATABASE pg_idgen_regress TO repl_alice;
GRANT USAGE, CREATE ON SCHEMA repl_app_schema TO repl_alice;
SET ROLE repl_alice;
CREATE TABLE repl_app_schema.alice_t (id int PRIMARY KEY);
SET client_min_messages = error;
CREATE PUBLICATION repl_alice_p FOR TABLE repl_app_schema.alice_t;
CREATE PUBLICATION repl_alice_bad FOR TABLE pg_idgen_worker;
\echo :LAST_ERROR_SQLSTATE
SET client_min_messages = warning;
ALTER PUBLICATION repl_alice_p SET (publish = 'insert');
RESET ROLE;
SELECT pubname, tablename FROM pg_publication_tables WHERE pubname = 'repl_alice_p';
-- a session with session_replication_role = replica that applies nothing from another node
-- changes pg_idgen's tables as any other session (the guard fires and lets it through)
SET session_replication_role = replica;
SELECT uid_layout_register('repl_layout', '2024-01-01', 41, 10, 12);
SELECT name FROM pg_idgen_layouts WHERE name = 'repl_layout';
SELECT uid_layout_drop('repl_layout');
SELECT count(*) AS repl_layout FROM pg_idgen_layouts WHERE name = 'repl_layout';
RESET session_replication_role;
-- the guard function refuses to be called other than as a trigger
SELECT pg_idgen_replica_guard();
\echo :LAST_ERROR_SQLSTATE
DROP PUBLICATION repl_p2, repl_s, repl_all, repl_ext_schema, repl_alice_p;
DROP TABLE repl_app, repl_app_schema.t, repl_app_schema.alice_t;
DROP SCHEMA repl_app_schema;
REVOKE CREATE ON DATABASE pg_idgen_regress FROM repl_alice;
SET client_min_messages = warning;
DROP ROLE repl_alice;
