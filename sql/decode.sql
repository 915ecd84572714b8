-- pg_idgen: uid_decode returns one composite value (not a set): `FROM t, uid_decode(t.id)` is
-- planned as one row per input row, and `(uid_decode(id)).*` works in a select list and in
-- RETURNING. Both forms are plain C functions returning the named type uid_parts.
CREATE TYPE @extschema@.uid_parts AS (
    ts          pg_catalog.timestamptz,
    worker_id   pg_catalog.int4,
    sequence    pg_catalog.int4,
    worker_high pg_catalog.int4,
    worker_low  pg_catalog.int4
);
COMMENT ON TYPE @extschema@.uid_parts IS 'the parts of an id (pg_idgen uid_decode): time (ms precision), worker id, sequence, and the halves of a split worker field (else NULL)';
-- IMMUTABLE although it reads pg_idgen.layout: the setting is fixed while the server runs and a
-- change needs snowflake_accept_layout() (see README, "Volatility").
CREATE FUNCTION @extschema@.uid_decode(id pg_catalog.int8) RETURNS @extschema@.uid_parts
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_uid_decode';
COMMENT ON FUNCTION @extschema@.uid_decode(pg_catalog.int8) IS 'the parts of an id of the server''s layout: ts, worker_id, sequence (worker_high, worker_low for a split worker field)';
-- STABLE: custom layouts are rows of pg_idgen_layouts.
CREATE FUNCTION @extschema@.uid_decode(id pg_catalog.int8, layout pg_catalog.text) RETURNS @extschema@.uid_parts
    STABLE STRICT PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_uid_decode_layout';
COMMENT ON FUNCTION @extschema@.uid_decode(pg_catalog.int8, pg_catalog.text) IS 'the parts of an id of a named, custom or the server''s layout: ts, worker_id, sequence, worker_high, worker_low';
