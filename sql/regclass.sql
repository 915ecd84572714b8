-- pg_idgen: the type of the columns that name a backing sequence (pg_idgen_segments.seq,
-- pg_idgen_segment_slots.seq, pg_idgen_keyed_spaces.seq). It is regclass (an OID shown and dumped
-- as the sequence's name, read back by name), with one difference: in a session that applies
-- changes from another node (a logical replication apply or table synchronization worker, or a
-- session with a replication origin) under session_replication_role = replica, where
-- pg_idgen_replica_guard skips the row, a name that does not exist reads as OID 0 instead of
-- failing (42P01). A row of these tables from
-- another node names that node's sequence, which this node usually lacks; the conversion is made
-- before any trigger runs, so with regclass it stopped the subscription for every table before
-- pg_idgen_replica_guard could skip the row (src/replication.rs, pg_idgen_regclass_in). Binary
-- coercible to and from regclass and oid.
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
