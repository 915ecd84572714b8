-- pg_idgen: the worker id registry's lease table. Used in the database pg_idgen.registry names
-- (any server of a fleet, or a small dedicated one, with CREATE EXTENSION pg_idgen); empty
-- elsewhere. One row per worker id ever leased: its holder (system identifier, node name, host,
-- port, and a random token per postmaster start that tells a server from its clone), since when
-- it holds it, until when (by this server's clock), when it was released, and the high-water mark
-- of the ids issued with it (hwm_ms: the holders' bound, raised at each claim and renewal, set to
-- the exact bound at a release; a new holder raises its generator to it). Not dumped: leases
-- belong to the running fleet, not to the data. The lease workers of the nodes write it only
-- through the SECURITY DEFINER functions of sql/registry_nodes.sql (pg_idgen_lease_claim,
-- pg_idgen_lease_release); their role needs EXECUTE on those, no right on the table (PUBLIC has
-- nothing).
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
