-- pg_idgen: custom layouts for uid_decode/uid_compose/snowflake_at, dumped with the database.
-- Written by uid_layout_register/uid_layout_drop (superuser only).
CREATE TABLE pg_idgen_layouts (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    epoch           timestamptz NOT NULL,
    unit_ms         integer NOT NULL,
    time_bits       integer NOT NULL,
    worker_bits     integer NOT NULL,
    sequence_bits   integer NOT NULL,
    field_order     text NOT NULL DEFAULT 'worker_sequence'
                    CHECK (field_order IN ('worker_sequence', 'sequence_worker')),
    worker_low_bits integer,
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      name NOT NULL DEFAULT current_user
);
COMMENT ON TABLE pg_idgen_layouts IS 'custom id layouts for uid_decode/uid_compose/snowflake_at (pg_idgen); change with uid_layout_register/uid_layout_drop';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_layouts', '');
REVOKE ALL ON pg_idgen_layouts FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON pg_idgen_layouts TO PUBLIC;
CREATE TRIGGER pg_idgen_layouts_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pg_idgen_layouts
    FOR EACH STATEMENT EXECUTE FUNCTION pg_idgen_catalog_changed();
REVOKE ALL ON FUNCTION uid_layout_register(text, timestamptz, integer, integer, integer, integer, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_layout_drop(text) FROM PUBLIC;
