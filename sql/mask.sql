-- pg_idgen: the keys of uid_mask/uid_unmask. No privilege for PUBLIC on the table: ordinary roles
-- use the keys through the functions, which read them by OID; the view shows metadata and a
-- fingerprint, never a key. Dumped with the database (by a role that may read it).
CREATE TABLE pg_idgen_mask_keys (
    name       text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    version    integer NOT NULL CHECK (version >= 1),
    key        bytea CHECK (length(key) = 32),
    in_use     boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by name NOT NULL DEFAULT current_user,
    dropped_at timestamptz,
    PRIMARY KEY (name, version),
    CHECK ((key IS NULL) = (dropped_at IS NOT NULL))
);
COMMENT ON TABLE pg_idgen_mask_keys IS 'keys of uid_mask/uid_unmask (pg_idgen): readable by superusers and the owner only; change with uid_mask_key_create/rotate/set_in_use/drop';
REVOKE ALL ON pg_idgen_mask_keys FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_mask_keys', '');
CREATE TRIGGER pg_idgen_mask_keys_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pg_idgen_mask_keys
    FOR EACH STATEMENT EXECUTE FUNCTION pg_idgen_catalog_changed();
CREATE TRIGGER pg_idgen_mask_keys_guard
    BEFORE UPDATE OR DELETE ON pg_idgen_mask_keys
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_mask_keys_guard();
CREATE TRIGGER pg_idgen_mask_keys_guard_truncate
    BEFORE TRUNCATE ON pg_idgen_mask_keys
    FOR EACH STATEMENT EXECUTE FUNCTION pg_idgen_mask_keys_guard();
CREATE VIEW uid_mask_keys AS
SELECT name, version,
       key IS NOT NULL AS kept,
       key IS NOT NULL AND version = max(version) FILTER (WHERE key IS NOT NULL) OVER (PARTITION BY name) AS current,
       in_use, created_at, created_by, dropped_at,
       encode(substr(sha256(key), 1, 8), 'hex') AS fingerprint
  FROM pg_idgen_mask_keys;
COMMENT ON VIEW uid_mask_keys IS 'mask keys and versions without the key bytes (pg_idgen); fingerprint: first 8 bytes of SHA-256 of the key';
REVOKE ALL ON uid_mask_keys FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON uid_mask_keys TO PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_mask_keys_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_create(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_rotate(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_set_in_use(text, integer, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_drop(text, integer) FROM PUBLIC;
