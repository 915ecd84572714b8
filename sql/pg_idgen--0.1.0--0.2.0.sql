-- pg_idgen 0.1.0 -> 0.2.0. Written by hand and reviewed (README "Releasing": the rules for
-- upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.2.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. tests/upgrade/extension_update.sh checks that a
-- database updated by it has exactly the objects of a fresh 0.2.0 install (tests/upgrade/objects.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.2.0'" to load this file. \quit

-- 1. The catalog trigger function is a plain V1 C function (a direct call gets 39P01, not an
--    internal error) and not executable by PUBLIC (triggers fire regardless). Replaced first:
--    the 0.2.0 library no longer has the 0.1.0 symbol (pg_idgen_catalog_changed_wrapper).
CREATE OR REPLACE FUNCTION pg_idgen_catalog_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_catalog_changed';
REVOKE ALL ON FUNCTION pg_idgen_catalog_changed() FROM PUBLIC;

-- 2. pg_idgen_segments gets the checks segment_create always made, as constraints (a row edited
--    by hand can no longer hold what the library refuses). Rows made by 0.1.0's segment_create
--    satisfy them; a hand-edited row stops the update with its tag named. The constraint names are
--    those PostgreSQL gives the same constraints in a fresh install.
DO $$
DECLARE
    bad text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_literal(s.tag), ', ') INTO bad
      FROM pg_idgen_segments s
     WHERE NOT (s.nodes BETWEEN 1 AND 1024)
        OR NOT (s.node_index >= 0 AND s.node_index < s.nodes)
        OR NOT (s.step <= 100000000 AND s.step % s.unit = 0)
        OR NOT coalesce((s.min_step IS NULL AND s.max_step IS NULL AND s.target_interval IS NULL AND s.unit = s.step)
                     OR (s.min_step = s.unit AND s.max_step >= s.step AND s.max_step % s.unit = 0
                         AND s.max_step / s.unit <= 1024 AND s.target_interval > interval '0'), false);
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'pg_idgen 0.2.0: segment tags % have a configuration segment_create refuses', bad
            USING ERRCODE = 'check_violation',
                  HINT = 'They were edited by hand. Fix or drop them (SELECT * FROM pg_idgen_segments), then run ALTER EXTENSION pg_idgen UPDATE again.';
    END IF;
END
$$;
ALTER TABLE pg_idgen_segments
    ADD CONSTRAINT pg_idgen_segments_nodes_check CHECK (nodes BETWEEN 1 AND 1024),
    ADD CONSTRAINT pg_idgen_segments_check CHECK (node_index >= 0 AND node_index < nodes),
    ADD CONSTRAINT pg_idgen_segments_check1 CHECK (step <= 100000000 AND step % unit = 0),
    ADD CONSTRAINT pg_idgen_segments_check2 CHECK (
        (min_step IS NULL AND max_step IS NULL AND target_interval IS NULL AND unit = step)
        OR (min_step = unit AND max_step >= step AND max_step % unit = 0
            AND max_step / unit <= 1024 AND target_interval > interval '0'));

-- 3. Each tag's backing sequence is OWNED BY pg_idgen_segments.seq, so that DROP EXTENSION drops
--    it (in 0.1.0 it was left behind). The row trigger links a tag's sequence when its row is
--    inserted (segment_create, pg_restore); the UPDATE fires it for the tags that exist.
CREATE FUNCTION pg_idgen_segment_link() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_segment_link';
REVOKE ALL ON FUNCTION pg_idgen_segment_link() FROM PUBLIC;
CREATE TRIGGER pg_idgen_segments_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segments
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();
UPDATE pg_idgen_segments SET seq = seq;

-- 4. Opaque public ids (new in 0.2.0): uid_mask/uid_unmask with named, versioned keys, the FF1
--    primitives, text codes; the keys table, its triggers and the keys view.
CREATE FUNCTION uid_ff1_decrypt(
    key bytea,
    radix INT,
    numerals INT[],
    tweak bytea DEFAULT '\x'
) RETURNS INT[]
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_ff1_decrypt_wrapper';

CREATE FUNCTION uid_ff1_encrypt(
    key bytea,
    radix INT,
    numerals INT[],
    tweak bytea DEFAULT '\x'
) RETURNS INT[]
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_ff1_encrypt_wrapper';

CREATE FUNCTION uid_from_text(
    code TEXT,
    format TEXT DEFAULT 'crockford'
) RETURNS bigint
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_from_text_wrapper';

CREATE FUNCTION uid_mask(
    id bigint,
    key_name TEXT
) RETURNS bigint
STRICT STABLE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_wrapper';

CREATE FUNCTION uid_mask(
    id bigint,
    key_name TEXT,
    version INT
) RETURNS bigint
STRICT STABLE PARALLEL RESTRICTED 
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_version_wrapper';

CREATE FUNCTION uid_mask_key_create(
    name TEXT
) RETURNS INT
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_key_create_wrapper';

CREATE FUNCTION uid_mask_key_drop(
    name TEXT,
    version INT
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_key_drop_wrapper';

CREATE FUNCTION uid_mask_key_rotate(
    name TEXT
) RETURNS INT
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_key_rotate_wrapper';

CREATE FUNCTION uid_mask_key_set_in_use(
    name TEXT,
    version INT,
    in_use bool
) RETURNS void
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_key_set_in_use_wrapper';

CREATE FUNCTION uid_mask_raw(
    id bigint,
    key bytea
) RETURNS bigint
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_raw_wrapper';

CREATE FUNCTION uid_mask_text(
    id bigint,
    key_name TEXT,
    format TEXT DEFAULT 'crockford'
) RETURNS TEXT
STRICT STABLE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_mask_text_wrapper';

CREATE FUNCTION uid_to_text(
    id bigint,
    format TEXT DEFAULT 'crockford'
) RETURNS TEXT
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_to_text_wrapper';

CREATE FUNCTION uid_unmask(
    masked bigint,
    key_name TEXT
) RETURNS bigint
STRICT STABLE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_unmask_wrapper';

CREATE FUNCTION uid_unmask(
    masked bigint,
    key_name TEXT,
    version INT
) RETURNS bigint
STRICT STABLE PARALLEL RESTRICTED 
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_unmask_version_wrapper';

CREATE FUNCTION uid_unmask_all(
    masked bigint,
    key_name TEXT
) RETURNS TABLE (
    version INT, 
    id bigint 
)
STRICT STABLE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_unmask_all_wrapper';

CREATE FUNCTION uid_unmask_raw(
    masked bigint,
    key bytea
) RETURNS bigint
IMMUTABLE STRICT PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_unmask_raw_wrapper';

CREATE FUNCTION uid_unmask_text(
    code TEXT,
    key_name TEXT,
    format TEXT DEFAULT 'crockford'
) RETURNS bigint
STRICT STABLE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'uid_unmask_text_wrapper';

CREATE FUNCTION pg_idgen_mask_keys_guard()
    RETURNS TRIGGER
    LANGUAGE c
    AS 'MODULE_PATHNAME', 'pg_idgen_mask_keys_guard_wrapper';

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
GRANT SELECT ON uid_mask_keys TO PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_mask_keys_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_create(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_rotate(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_set_in_use(text, integer, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_mask_key_drop(text, integer) FROM PUBLIC;

-- 5. Worker id leases (new in 0.2.0): snowflake_worker() gains the column lease (its state, or
--    'off'); snowflake_lease(); the registry's lease table pg_idgen_leases (empty unless this
--    database is a registry). A view over snowflake_worker() stops the update (DROP FUNCTION):
--    drop it and create it again afterwards.
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
AS 'MODULE_PATHNAME', 'snowflake_worker_wrapper';
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
