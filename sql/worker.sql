-- pg_idgen: this database's worker id when pg_idgen.worker_id is not set, with the system
-- identifier of the cluster it was set on (clone safety). Dumped with the database.
CREATE TABLE pg_idgen_worker (
    singleton         boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    worker_id         integer NOT NULL CHECK (worker_id >= 0),
    system_identifier numeric(20, 0) NOT NULL,
    set_at            timestamptz NOT NULL DEFAULT now(),
    set_by            name NOT NULL DEFAULT current_user
);
COMMENT ON TABLE pg_idgen_worker IS 'this database''s snowflake worker id when pg_idgen.worker_id is not set (pg_idgen); change with set_worker_id/clear_worker_id';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_worker', '');
REVOKE ALL ON pg_idgen_worker FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON pg_idgen_worker TO PUBLIC;
CREATE TRIGGER pg_idgen_worker_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pg_idgen_worker
    FOR EACH STATEMENT EXECUTE FUNCTION pg_idgen_catalog_changed();
REVOKE ALL ON FUNCTION set_worker_id(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION clear_worker_id() FROM PUBLIC;
