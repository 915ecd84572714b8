-- pg_idgen 0.2.0 -> 0.3.0. Written by hand and reviewed (README "Releasing": the rules for
-- upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.3.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. tests/upgrade/extension_update.sh checks that a
-- database updated by it (from 0.2.0, and from 0.1.0 through 0.2.0) has exactly the objects of a
-- fresh 0.3.0 install (tests/upgrade/objects.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.3.0'" to load this file. \quit

-- 1. Worker id leases. snowflake_worker() gains the column lease (the lease's state, or 'off'),
--    under a new symbol (the 0.3.0 library keeps 0.2.0's, snowflake_worker_wrapper, as a shim
--    that asks for this update). A view or a function that uses snowflake_worker() would stop
--    DROP FUNCTION: it is named first, with what to do.
DO $$
DECLARE
    users text;
BEGIN
    -- a view depends through its _RETURN rule: name the view
    SELECT pg_catalog.string_agg(DISTINCT CASE WHEN r.oid IS NOT NULL
                                               THEN pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, r.ev_class, 0)
                                               ELSE pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) END, '; ') INTO users
      FROM pg_catalog.pg_depend d
      LEFT JOIN pg_catalog.pg_rewrite r
             ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
            AND r.oid OPERATOR(pg_catalog.=) d.objid
     WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
       AND d.refobjid OPERATOR(pg_catalog.=) 'snowflake_worker()'::pg_catalog.regprocedure
       AND d.deptype OPERATOR(pg_catalog.=) 'n';
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'pg_idgen 0.3.0 replaces snowflake_worker() (it gains the column lease), and these objects use it: %', users
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Drop them (keep their definitions: pg_get_viewdef), run ALTER EXTENSION pg_idgen UPDATE, and create them again.';
    END IF;
END
$$;
DROP FUNCTION snowflake_worker();
CREATE FUNCTION snowflake_worker() RETURNS TABLE (
    worker_id INT,
    source TEXT,
    system_identifier TEXT,
    confirmed bool,
    lease TEXT
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_worker_with_lease_wrapper';

-- 2. snowflake_lease(): this node's lease (sql/lease.sql's comment below).
CREATE FUNCTION snowflake_lease() RETURNS TABLE (
    mode TEXT,
    worker_id INT,
    state TEXT,
    valid_for_ms bigint,
    since timestamp with time zone,
    detail TEXT,
    renewals bigint,
    failures bigint,
    conflicts bigint,
    refusals bigint
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'snowflake_lease_wrapper';

-- 3. The registry's lease table (sql/lease.sql, as is).
CREATE TABLE pg_idgen_leases (
    worker_id         integer PRIMARY KEY CHECK (worker_id >= 0),
    system_identifier numeric(20, 0) NOT NULL,
    node_name         text NOT NULL,
    host              text NOT NULL,
    port              integer NOT NULL,
    token             bigint NOT NULL,
    since             timestamptz NOT NULL,
    renewed_at        timestamptz NOT NULL,
    lease_until       timestamptz NOT NULL,
    released_at       timestamptz,
    hwm_ms            bigint NOT NULL DEFAULT 0,
    floor_ms          bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE pg_idgen_leases IS 'worker id leases of the nodes whose pg_idgen.registry is this database (pg_idgen)';
COMMENT ON COLUMN pg_idgen_leases.hwm_ms IS 'Unix ms by the holders'' clocks: no id of this worker id was issued at or after it; a new holder continues above it';
COMMENT ON COLUMN pg_idgen_leases.floor_ms IS 'hwm_ms when the current holder took the id over from another: it continues above it';
REVOKE ALL ON pg_idgen_leases FROM PUBLIC;
COMMENT ON FUNCTION snowflake_lease() IS 'this node''s worker id lease: mode, id, state, local validity, holder or error, counters';
