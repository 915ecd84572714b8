-- pg_idgen 0.5.0 -> 0.6.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.6.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.5.0
-- (tests/upgrade/extension_update_050.sh) checks that a database updated by it has exactly the
-- objects of a fresh 0.6.0 install (tests/upgrade/objects.sql) and that nothing of the extension
-- binds a function, operator or type outside pg_catalog and the extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.6.0'" to load this file. \quit

-- Each change of 0.6.0 adds its section below, in the form the install script creates it.

-- ---------------------------------------------------------------------------------------------
-- The columns naming a backing sequence become pg_idgen_regclass (sql/regclass.sql): regclass,
-- except that a logical replication worker reads a name that does not exist as 0, so a row of
-- pg_idgen's tables from another node is skipped by the guard trigger instead of stopping the
-- subscription (42P01). The link triggers name the column (UPDATE OF seq) and keyed_status
-- reads it: both are made again around the change of type.
CREATE TYPE pg_idgen_regclass;
CREATE FUNCTION pg_idgen_regclass_in(cstring) RETURNS pg_idgen_regclass
    STRICT STABLE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_regclass_in';
CREATE FUNCTION pg_idgen_regclass_out(pg_idgen_regclass) RETURNS cstring
    STRICT STABLE PARALLEL SAFE LANGUAGE internal AS 'regclassout';
CREATE FUNCTION pg_idgen_regclass_recv(internal) RETURNS pg_idgen_regclass
    STRICT IMMUTABLE PARALLEL SAFE LANGUAGE internal AS 'oidrecv';
CREATE FUNCTION pg_idgen_regclass_send(pg_idgen_regclass) RETURNS bytea
    STRICT IMMUTABLE PARALLEL SAFE LANGUAGE internal AS 'oidsend';
CREATE TYPE pg_idgen_regclass (
    INPUT = pg_idgen_regclass_in, OUTPUT = pg_idgen_regclass_out,
    RECEIVE = pg_idgen_regclass_recv, SEND = pg_idgen_regclass_send,
    INTERNALLENGTH = 4, PASSEDBYVALUE, ALIGNMENT = int4, STORAGE = plain
);
COMMENT ON TYPE pg_idgen_regclass IS 'pg_idgen: regclass naming a backing sequence, except that a logical replication worker reads a name that does not exist as 0 (the row is then skipped by pg_idgen_replica_guard) instead of stopping the subscription';
-- Type input and output functions are called without a privilege check; nobody calls them directly.
REVOKE ALL ON FUNCTION pg_idgen_regclass_in(cstring) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_regclass_out(pg_idgen_regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_regclass_recv(internal) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_regclass_send(pg_idgen_regclass) FROM PUBLIC;
CREATE CAST (pg_idgen_regclass AS pg_catalog.regclass) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (pg_catalog.regclass AS pg_idgen_regclass) WITHOUT FUNCTION AS ASSIGNMENT;
CREATE CAST (pg_idgen_regclass AS pg_catalog.oid) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (pg_catalog.oid AS pg_idgen_regclass) WITHOUT FUNCTION AS ASSIGNMENT;
DROP VIEW keyed_status;
DROP TRIGGER pg_idgen_segments_link ON pg_idgen_segments;
DROP TRIGGER pg_idgen_segment_slots_link ON pg_idgen_segment_slots;
DROP TRIGGER pg_idgen_keyed_spaces_link ON pg_idgen_keyed_spaces;
ALTER TABLE pg_idgen_segments ALTER COLUMN seq TYPE pg_idgen_regclass;
ALTER TABLE pg_idgen_segment_slots ALTER COLUMN seq TYPE pg_idgen_regclass;
ALTER TABLE pg_idgen_keyed_spaces ALTER COLUMN seq TYPE pg_idgen_regclass;
CREATE TRIGGER pg_idgen_segments_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segments
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();
CREATE TRIGGER pg_idgen_segment_slots_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segment_slots
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();
CREATE TRIGGER pg_idgen_keyed_spaces_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_keyed_spaces
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_keyed_link();
CREATE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner, c.relacl AS privileges,
       s.nodes, s.node_index,
       (SELECT LEAST(pg_catalog.max(b.bound),
                     (9223372036854775807 OPERATOR(pg_catalog.-) coalesce(s.node_index, 0))
                     OPERATOR(pg_catalog./) coalesce(s.nodes, 1))
               OPERATOR(pg_catalog.*) coalesce(s.nodes, 1) OPERATOR(pg_catalog.+) coalesce(s.node_index, 0)
          FROM pg_idgen_keyed_bounds b WHERE b.space OPERATOR(pg_catalog.=) s.space) AS max_value,
       s.registry
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space)
LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.seq::pg_catalog.oid;
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, highest durable bound and floor in memory, bound raises since server start, owner and privileges (USAGE: keyed_next, keyed_last), fleet mode''s nodes and node_index, and max_value: no value this node handed out for any key of the space is above it (its durable bounds), and whether bounds are raised through the lease registry';
REVOKE ALL ON keyed_status FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON keyed_status TO PUBLIC;
