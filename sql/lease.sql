-- pg_idgen: the worker id registry's lease table. Used in the database pg_idgen.registry names
-- (any server of a fleet, or a small dedicated one, with CREATE EXTENSION pg_idgen); empty
-- elsewhere. One row per worker id ever leased: its holder (system identifier, node name, host,
-- port, and a random token per postmaster start that tells a server from its clone), since when
-- it holds it, until when (by this server's clock) and when it was released. Not dumped: leases
-- belong to the running fleet, not to the data. The lease workers of the nodes write it with
-- INSERT ... ON CONFLICT DO UPDATE (src/lease/registry.rs); their role needs SELECT, INSERT and
-- UPDATE on it (GRANT them; PUBLIC has nothing).
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
    released_at       timestamptz
);
COMMENT ON TABLE pg_idgen_leases IS 'worker id leases of the nodes whose pg_idgen.registry is this database (pg_idgen)';
REVOKE ALL ON pg_idgen_leases FROM PUBLIC;
COMMENT ON FUNCTION snowflake_lease() IS 'this node''s worker id lease: mode, id, state, local validity, holder or error, counters';
