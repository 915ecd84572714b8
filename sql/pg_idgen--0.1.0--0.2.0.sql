-- pg_idgen 0.1.0 -> 0.2.0. Written by hand and reviewed (README "Releasing": the rules for
-- upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.2.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. tests/upgrade/extension_update.sh checks that a
-- database updated by it has exactly the objects of a fresh 0.2.0 install (tests/upgrade/objects.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.2.0'" to load this file. \quit

-- 0. 0.2.0 refuses databases that are not UTF8 (text arguments are UTF-8 to the library); 0.1.0
--    did not. Refused here as CREATE EXTENSION refuses it.
DO $$
BEGIN
    IF pg_catalog.getdatabaseencoding() OPERATOR(pg_catalog.<>) 'UTF8' THEN
        RAISE EXCEPTION 'pg_idgen 0.2.0 needs a UTF8 database; this one is %', pg_catalog.getdatabaseencoding()
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Keep pg_idgen 0.1.0 here, or move the data into a database created with ENCODING ''UTF8'' (TEMPLATE template0) and install 0.2.0 there.';
    END IF;
END
$$;

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
--    inserted (segment_create, pg_restore); the UPDATE fires it for the tags that exist. A tag
--    whose sequence was dropped by hand gets a WARNING (it fails at use already); a tag whose
--    row names a relation that is not its pg_idgen_seg_<n> sequence stops the update, named.
DO $$
DECLARE
    bad text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.format('%L (%s)', s.tag, c.relname), ', ') INTO bad
      FROM pg_idgen_segments s
      JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.seq::pg_catalog.oid
      JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) 'pg_idgen_segments'::pg_catalog.regclass
     WHERE c.relkind OPERATOR(pg_catalog.<>) 'S'
        OR c.relnamespace OPERATOR(pg_catalog.<>) t.relnamespace
        OR pg_catalog.left(c.relname::pg_catalog.text, 13) OPERATOR(pg_catalog.<>) 'pg_idgen_seg_';
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION 'pg_idgen 0.2.0: segment tags % are not backed by a pg_idgen_seg_<n> sequence of the extension''s schema', bad
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Their rows were edited by hand. Point each at its own sequence again (UPDATE pg_idgen_segments SET seq = ...), or delete the row (DELETE FROM pg_idgen_segments WHERE tag = ...: the tag is then gone, and a tag created anew with that name starts at its start again), then run ALTER EXTENSION pg_idgen UPDATE again.';
    END IF;
END
$$;
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

-- 5. uid_decode returns one composite value of the new type uid_parts, not a set (one row per
--    input row in plans, usable in RETURNING): both forms are replaced, which a view, an index or
--    a function body that uses them would stop; they are named first, with what to do.
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
       AND d.refobjid OPERATOR(pg_catalog.=) ANY (ARRAY['uid_decode(bigint)'::pg_catalog.regprocedure,
                                                        'uid_decode(bigint, text)'::pg_catalog.regprocedure]::pg_catalog.oid[])
       AND d.deptype OPERATOR(pg_catalog.=) 'n';
    IF users IS NOT NULL THEN
        RAISE EXCEPTION 'pg_idgen 0.2.0 replaces uid_decode (it returns one uid_parts value instead of a set), and these objects use it: %', users
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'Drop them (keep their definitions: pg_get_viewdef, pg_get_indexdef), run ALTER EXTENSION pg_idgen UPDATE, and create them again; FROM t, uid_decode(t.id) d and (uid_decode(id)).ts read as before.';
    END IF;
END
$$;
DROP FUNCTION uid_decode(bigint);
DROP FUNCTION uid_decode(bigint, text);
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

-- 6. snowflake_next_text(): an id as decimal text, for JSON payloads.
CREATE FUNCTION snowflake_next_text() RETURNS TEXT
    STRICT VOLATILE PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'snowflake_next_text_wrapper';
COMMENT ON FUNCTION snowflake_next_text() IS 'snowflake_next() as decimal text, for JSON payloads (JavaScript numbers lose integers above 2^53 - 1)';

-- 7. uid_migrate_key(): converts a serial/identity/nextval() key column (sql/migrate.sql, as is).
-- pg_idgen: uid_migrate_key -- converts an existing key column fed by a sequence (serial/bigserial,
-- GENERATED ... AS IDENTITY, or DEFAULT nextval(...)) to DEFAULT snowflake_next() or DEFAULT
-- segment_next(tag), in the caller's transaction, after the checks a DBA wants. Returns the
-- statements, in order; with dry_run => true it returns them without running any.
--
-- Security: SECURITY INVOKER (the caller must own the table, and the tables whose referencing
-- columns it converts); search_path pinned to pg_catalog, pg_temp; every catalog object,
-- function and operator schema-qualified; every identifier from the catalog quoted with
-- format('%I'), every value with format('%L'). The extension's own functions are named with the
-- extension's schema as it is at the call (read from pg_extension), never from caller input.
CREATE FUNCTION @extschema@.uid_migrate_key(
    tbl           pg_catalog.regclass,
    col           pg_catalog.name,
    generator     pg_catalog.text DEFAULT 'snowflake',
    tag           pg_catalog.text DEFAULT NULL,
    to_bigint     pg_catalog.bool DEFAULT false,
    drop_sequence pg_catalog.bool DEFAULT true,
    dry_run       pg_catalog.bool DEFAULT false)
RETURNS SETOF pg_catalog.text
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    v_ext      pg_catalog.name;      -- the extension's schema
    v_nsp      pg_catalog.name;      -- the table's schema and name
    v_rel      pg_catalog.name;
    v_relkind  pg_catalog."char";
    v_owner    pg_catalog.oid;
    v_ispart   pg_catalog.bool;
    v_qual     pg_catalog.text;      -- schema.table, quoted
    v_attnum   pg_catalog.int2;
    v_type     pg_catalog.oid;
    v_ident    pg_catalog."char";
    v_gen      pg_catalog."char";
    v_kind     pg_catalog.text;      -- serial, nextval, identity always, identity by default
    v_seq      pg_catalog.oid;
    v_seqname  pg_catalog.text;      -- schema.sequence, quoted
    v_defexpr  pg_catalog.text;
    v_max      pg_catalog.int8;
    v_floor    pg_catalog.int8;
    v_hwm      pg_catalog.int8;
    v_exists   pg_catalog.bool;
    v_default  pg_catalog.text;      -- the new DEFAULT expression
    v_stmts    pg_catalog.text[] := '{}';
    v_s        pg_catalog.text;
    v_list     pg_catalog.text;
    r          record;
BEGIN
    -- 1. arguments: only tag may be NULL (and only for generator => 'snowflake')
    IF tbl IS NULL THEN RAISE EXCEPTION 'argument "tbl" must not be NULL' USING ERRCODE = '22004'; END IF;
    IF col IS NULL THEN RAISE EXCEPTION 'argument "col" must not be NULL' USING ERRCODE = '22004'; END IF;
    IF generator IS NULL THEN RAISE EXCEPTION 'argument "generator" must not be NULL' USING ERRCODE = '22004'; END IF;
    IF to_bigint IS NULL THEN RAISE EXCEPTION 'argument "to_bigint" must not be NULL' USING ERRCODE = '22004'; END IF;
    IF drop_sequence IS NULL THEN RAISE EXCEPTION 'argument "drop_sequence" must not be NULL' USING ERRCODE = '22004'; END IF;
    IF dry_run IS NULL THEN RAISE EXCEPTION 'argument "dry_run" must not be NULL' USING ERRCODE = '22004'; END IF;
    IF generator OPERATOR(pg_catalog.<>) 'snowflake' AND generator OPERATOR(pg_catalog.<>) 'segment' THEN
        RAISE EXCEPTION 'invalid generator "%"', generator USING ERRCODE = '22023',
            HINT = 'Use ''snowflake'' (DEFAULT snowflake_next()) or ''segment'' (DEFAULT segment_next(tag)).';
    END IF;
    IF generator OPERATOR(pg_catalog.=) 'segment' AND tag IS NULL THEN
        RAISE EXCEPTION 'argument "tag" must not be NULL with generator => ''segment''' USING ERRCODE = '22004';
    END IF;
    IF generator OPERATOR(pg_catalog.=) 'snowflake' AND tag IS NOT NULL THEN
        RAISE EXCEPTION 'a tag is only used with generator => ''segment''' USING ERRCODE = '22023';
    END IF;

    SELECT n.nspname INTO v_ext
      FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
     WHERE e.extname OPERATOR(pg_catalog.=) 'pg_idgen';

    -- 2. the table: an ordinary or partitioned table the caller owns (not a partition)
    SELECT n.nspname, c.relname, c.relkind, c.relowner, c.relispartition
      INTO v_nsp, v_rel, v_relkind, v_owner, v_ispart
      FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.oid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'relation with OID % does not exist', tbl::pg_catalog.oid USING ERRCODE = '42P01';
    END IF;
    v_qual := pg_catalog.format('%I.%I', v_nsp, v_rel);
    IF v_relkind OPERATOR(pg_catalog.<>) 'r' AND v_relkind OPERATOR(pg_catalog.<>) 'p' THEN
        RAISE EXCEPTION '"%" is not a table', v_qual USING ERRCODE = '42809';
    END IF;
    IF v_ispart THEN
        RAISE EXCEPTION '"%" is a partition', v_qual USING ERRCODE = '42809',
            HINT = 'Migrate the partitioned table at the root: its partitions are converted with it.';
    END IF;
    IF NOT pg_catalog.pg_has_role(CURRENT_USER, v_owner, 'USAGE') THEN
        RAISE EXCEPTION 'must be owner of table %', v_qual USING ERRCODE = '42501';
    END IF;

    -- 3. lock before anything is read: ACCESS EXCLUSIVE (SHARE for a dry run: no writes while the
    --    checks read, reads go on); partitions are locked with their parent
    v_s := pg_catalog.format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', v_qual);
    IF dry_run THEN
        EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE MODE', v_qual);
    ELSE
        EXECUTE v_s;
    END IF;
    v_stmts := v_stmts OPERATOR(pg_catalog.||) (v_s OPERATOR(pg_catalog.||) ';');

    -- 4. the column
    SELECT a.attnum, a.atttypid, a.attidentity, a.attgenerated INTO v_attnum, v_type, v_ident, v_gen
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid AND a.attname OPERATOR(pg_catalog.=) col
       AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of table "%" does not exist', col, v_qual USING ERRCODE = '42703';
    END IF;
    IF v_gen OPERATOR(pg_catalog.<>) '' THEN
        RAISE EXCEPTION 'column "%" of table "%" is a generated column', col, v_qual USING ERRCODE = '42P16';
    END IF;

    -- 5. what feeds it: an identity, or a DEFAULT that is exactly nextval() of one sequence
    IF v_ident OPERATOR(pg_catalog.<>) '' THEN
        v_kind := CASE WHEN v_ident OPERATOR(pg_catalog.=) 'a' THEN 'identity always' ELSE 'identity by default' END;
        SELECT d.objid INTO v_seq
          FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) d.objid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refobjid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid AND d.refobjsubid OPERATOR(pg_catalog.=) v_attnum
           AND d.deptype OPERATOR(pg_catalog.=) 'i' AND s.relkind OPERATOR(pg_catalog.=) 'S';
        IF NOT drop_sequence THEN
            RAISE EXCEPTION 'the sequence of identity column "%" of table "%" cannot be kept', col, v_qual
                USING ERRCODE = '0A000',
                      DETAIL = 'An identity column''s sequence belongs to the column: ALTER TABLE ... DROP IDENTITY drops it.',
                      HINT = 'Pass drop_sequence => true; the DEFAULT that replaces it does not need it.';
        END IF;
    ELSE
        SELECT pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) INTO v_defexpr
          FROM pg_catalog.pg_attrdef ad
         WHERE ad.adrelid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid AND ad.adnum OPERATOR(pg_catalog.=) v_attnum;
        SELECT s.oid INTO v_seq
          FROM pg_catalog.pg_attrdef ad
          JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
                                     AND d.objid OPERATOR(pg_catalog.=) ad.oid
                                     AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
          JOIN pg_catalog.pg_class s ON s.oid OPERATOR(pg_catalog.=) d.refobjid AND s.relkind OPERATOR(pg_catalog.=) 'S'
         WHERE ad.adrelid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid AND ad.adnum OPERATOR(pg_catalog.=) v_attnum;
        IF v_seq IS NULL OR v_defexpr IS NULL OR v_defexpr OPERATOR(pg_catalog.<>)
               pg_catalog.format('nextval(%L::regclass)', v_seq::pg_catalog.regclass::pg_catalog.text) THEN
            RAISE EXCEPTION 'column "%" of table "%" is not fed by a sequence', col, v_qual
                USING ERRCODE = '55000',
                      DETAIL = pg_catalog.format('Its default is %s; uid_migrate_key converts serial and bigserial columns, GENERATED ... AS IDENTITY columns and DEFAULT nextval(''sequence'') columns.',
                                                 COALESCE(v_defexpr, 'not set'));
        END IF;
        -- serial: the sequence is owned by the column (OWNED BY); else an explicit nextval()
        v_kind := CASE WHEN EXISTS (
                      SELECT FROM pg_catalog.pg_depend d
                       WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                         AND d.objid OPERATOR(pg_catalog.=) v_seq
                         AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                         AND d.refobjid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid
                         AND d.refobjsubid OPERATOR(pg_catalog.=) v_attnum
                         AND d.deptype OPERATOR(pg_catalog.=) 'a')
                  THEN 'serial' ELSE 'nextval' END;
    END IF;
    SELECT pg_catalog.format('%I.%I', n.nspname, s.relname) INTO v_seqname
      FROM pg_catalog.pg_class s JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) s.relnamespace
     WHERE s.oid OPERATOR(pg_catalog.=) v_seq;

    -- partitions: each has the parent's feed (the same nextval() default, the identity) or none
    IF v_relkind OPERATOR(pg_catalog.=) 'p' THEN
        FOR r IN
            SELECT pt.relid::pg_catalog.oid AS part, pg_catalog.pg_get_expr(ad.adbin, ad.adrelid) AS expr,
                   a.attidentity AS ident
              FROM pg_catalog.pg_partition_tree(tbl) pt
              JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) pt.relid::pg_catalog.oid
                                            AND a.attname OPERATOR(pg_catalog.=) col
              LEFT JOIN pg_catalog.pg_attrdef ad ON ad.adrelid OPERATOR(pg_catalog.=) a.attrelid
                                                AND ad.adnum OPERATOR(pg_catalog.=) a.attnum
             WHERE pt.relid::pg_catalog.oid OPERATOR(pg_catalog.<>) tbl::pg_catalog.oid
        LOOP
            IF (v_ident OPERATOR(pg_catalog.=) '' AND r.ident OPERATOR(pg_catalog.<>) '')
               OR (v_ident OPERATOR(pg_catalog.<>) '' AND r.expr IS NOT NULL)
               OR (v_ident OPERATOR(pg_catalog.=) '' AND r.expr IS NOT NULL AND r.expr OPERATOR(pg_catalog.<>) v_defexpr) THEN
                RAISE EXCEPTION 'partition "%" of "%" feeds column "%" otherwise than its parent', r.part::pg_catalog.regclass, v_qual, col
                    USING ERRCODE = '55000',
                          DETAIL = pg_catalog.format('Its default is %s.', COALESCE(r.expr, 'an identity')),
                          HINT = 'Give the partition the parent''s default (or none) first.';
            END IF;
        END LOOP;
    END IF;

    -- 6. the type: bigint, or integer/smallint converted on request (with the integer columns
    --    whose foreign keys reference it); refused where a view or rule depends on a column
    --    to convert, or the column is in the partition key
    IF v_type OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype THEN
        IF v_type OPERATOR(pg_catalog.<>) 'pg_catalog.int4'::pg_catalog.regtype
           AND v_type OPERATOR(pg_catalog.<>) 'pg_catalog.int2'::pg_catalog.regtype THEN
            RAISE EXCEPTION 'column "%" of table "%" is %, not an integer type', col, v_qual, v_type::pg_catalog.regtype
                USING ERRCODE = '42804';
        END IF;
        IF NOT to_bigint THEN
            RAISE EXCEPTION 'column "%" of table "%" is %: 64-bit ids do not fit', col, v_qual, v_type::pg_catalog.regtype
                USING ERRCODE = '42804',
                      HINT = pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint first (and the columns whose foreign keys reference it), or pass to_bigint => true.', v_qual, col);
        END IF;
    END IF;
    -- columns to convert: the key (if not bigint) and referencing integer columns
    FOR r IN
        SELECT x.rel, x.attnum, a.attname, a.atttypid::pg_catalog.regtype AS typ,
               pg_catalog.format('%I.%I', n.nspname, c.relname) AS qual, c.relowner
          FROM (SELECT tbl::pg_catalog.oid AS rel, v_attnum AS attnum
                 WHERE v_type OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype
                UNION
                SELECT f.conrelid, f.conkey[k.i]
                  FROM pg_catalog.pg_constraint f
                  CROSS JOIN LATERAL pg_catalog.generate_subscripts(f.confkey, 1) AS k(i)
                 WHERE f.contype OPERATOR(pg_catalog.=) 'f' AND f.confrelid OPERATOR(pg_catalog.=) tbl::pg_catalog.oid
                   AND f.conparentid OPERATOR(pg_catalog.=) 0
                   AND f.confkey[k.i] OPERATOR(pg_catalog.=) v_attnum) x
          JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) x.rel AND a.attnum OPERATOR(pg_catalog.=) x.attnum
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) x.rel
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
         WHERE a.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype
         ORDER BY x.rel OPERATOR(pg_catalog.<>) tbl::pg_catalog.oid, 5, 3
    LOOP
        IF r.rel OPERATOR(pg_catalog.<>) tbl::pg_catalog.oid AND NOT to_bigint THEN
            IF generator OPERATOR(pg_catalog.=) 'snowflake' THEN
                RAISE EXCEPTION 'column "%" of table "%" references "%"."%" and is %: 64-bit ids do not fit',
                    r.attname, r.qual, v_qual, col, r.typ
                    USING ERRCODE = '42804', HINT = 'Pass to_bigint => true to convert the referencing columns too, or ALTER them to bigint first.';
            END IF;
            RAISE NOTICE 'column "%" of table "%" references "%"."%" and is %: it holds segment values up to its type''s limit only',
                r.attname, r.qual, v_qual, col, r.typ;
            CONTINUE;
        END IF;
        IF NOT pg_catalog.pg_has_role(CURRENT_USER, r.relowner, 'USAGE') THEN
            RAISE EXCEPTION 'must be owner of table % (its column "%" references "%"."%")', r.qual, r.attname, v_qual, col
                USING ERRCODE = '42501';
        END IF;
        SELECT pg_catalog.string_agg(DISTINCT w.ev_class::pg_catalog.regclass::pg_catalog.text, ', ') INTO v_list
          FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_rewrite w ON w.oid OPERATOR(pg_catalog.=) d.objid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refobjid OPERATOR(pg_catalog.=) r.rel AND d.refobjsubid OPERATOR(pg_catalog.=) r.attnum;
        IF v_list IS NOT NULL THEN
            RAISE EXCEPTION 'cannot convert column "%" of table "%" to bigint: views or rules depend on it: %', r.attname, r.qual, v_list
                USING ERRCODE = '0A000',
                      HINT = 'Drop those views (or rules) and re-create them after the conversion, or convert the column to bigint yourself first.';
        END IF;
        IF EXISTS (SELECT FROM pg_catalog.pg_partitioned_table p
                    WHERE p.partrelid OPERATOR(pg_catalog.=) r.rel AND r.attnum OPERATOR(pg_catalog.=) ANY (p.partattrs::pg_catalog.int2[])) THEN
            RAISE EXCEPTION 'cannot convert column "%" of table "%" to bigint: it is in the partition key', r.attname, r.qual
                USING ERRCODE = '0A000', HINT = 'Re-create the partitioned table with a bigint key.';
        END IF;
        v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint;', r.qual, r.attname);
    END LOOP;

    -- 7. existing values below every value the new default can produce
    EXECUTE pg_catalog.format('SELECT pg_catalog.max(%I)::pg_catalog.int8 FROM %s', col, v_qual) INTO v_max;
    IF generator OPERATOR(pg_catalog.=) 'snowflake' THEN
        -- the generator's current position (its next id is above it); this takes one id
        EXECUTE pg_catalog.format('SELECT %I.snowflake_next()', v_ext) INTO v_floor;
        IF v_max OPERATOR(pg_catalog.>=) v_floor THEN
            RAISE EXCEPTION 'column "%" of table "%" holds values up to %, not below the snowflake generator''s current id %',
                col, v_qual, v_max, v_floor
                USING ERRCODE = '55000',
                      HINT = 'New ids could collide with existing ones. Use generator => ''segment'' (it starts above the maximum), or a worker id and layout whose ids lie above these values.';
        END IF;
        v_default := pg_catalog.format('%I.snowflake_next()', v_ext);
    ELSE
        EXECUTE pg_catalog.format('SELECT true, s.persisted_hwm FROM %I.segment_status s WHERE s.tag OPERATOR(pg_catalog.=) $1', v_ext)
            INTO v_exists, v_hwm USING tag;
        IF v_exists IS NULL THEN
            v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('SELECT %I.segment_create(%L, start => %s);',
                v_ext, tag, GREATEST(COALESCE(v_max, 0), 0) OPERATOR(pg_catalog.+) 1);
        ELSIF v_max IS NOT NULL THEN
            -- values up to the persisted high-water mark may have been handed out; move past both
            v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('SELECT %I.segment_set(%L, %s);',
                v_ext, tag, GREATEST(v_max, v_hwm) OPERATOR(pg_catalog.+) 1);
        END IF;
        v_default := pg_catalog.format('%I.segment_next(%L)', v_ext, tag);
    END IF;

    -- 8. the sequence out, the new DEFAULT in
    IF v_ident OPERATOR(pg_catalog.<>) '' THEN
        v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY;', v_qual, col);
        -- before PostgreSQL 17 a partition can carry an identity of its own
        FOR r IN
            SELECT pg_catalog.format('ALTER TABLE %I.%I ALTER COLUMN %I DROP IDENTITY;', n.nspname, c.relname, col) AS s
              FROM pg_catalog.pg_partition_tree(tbl) pt
              JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) pt.relid::pg_catalog.oid
              JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
              JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) col
             WHERE v_relkind OPERATOR(pg_catalog.=) 'p' AND c.oid OPERATOR(pg_catalog.<>) tbl::pg_catalog.oid
               AND a.attidentity OPERATOR(pg_catalog.<>) ''
               AND pg_catalog.current_setting('server_version_num')::pg_catalog.int4 OPERATOR(pg_catalog.<) 170000
             ORDER BY 1
        LOOP
            v_stmts := v_stmts OPERATOR(pg_catalog.||) r.s;
        END LOOP;
    END IF;
    v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s;', v_qual, col, v_default);
    IF v_ident OPERATOR(pg_catalog.=) '' AND drop_sequence THEN
        -- only if nothing else uses it (another column's default, a view): never CASCADE
        SELECT pg_catalog.string_agg(pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid), ', ') INTO v_list
          FROM pg_catalog.pg_depend d
         WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refobjid OPERATOR(pg_catalog.=) v_seq AND d.deptype OPERATOR(pg_catalog.=) 'n'
           AND NOT (d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_attrdef'::pg_catalog.regclass
                    AND d.objid OPERATOR(pg_catalog.=) ANY (ARRAY(
                        SELECT ad.oid FROM pg_catalog.pg_attrdef ad
                         WHERE ad.adnum OPERATOR(pg_catalog.=) v_attnum
                           AND ad.adrelid OPERATOR(pg_catalog.=) ANY (ARRAY(
                               SELECT pt.relid::pg_catalog.oid FROM pg_catalog.pg_partition_tree(tbl) pt
                               UNION SELECT tbl::pg_catalog.oid)))));
        IF v_list IS NOT NULL THEN
            RAISE EXCEPTION 'sequence % is also used by: %', v_seqname, v_list
                USING ERRCODE = '2BP01', HINT = 'Pass drop_sequence => false to keep it.';
        END IF;
        IF NOT pg_catalog.pg_has_role(CURRENT_USER, (SELECT s.relowner FROM pg_catalog.pg_class s WHERE s.oid OPERATOR(pg_catalog.=) v_seq), 'USAGE') THEN
            RAISE EXCEPTION 'must be owner of sequence % to drop it', v_seqname
                USING ERRCODE = '42501', HINT = 'Pass drop_sequence => false to keep it.';
        END IF;
        v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('DROP SEQUENCE %s;', v_seqname);
    END IF;

    RAISE NOTICE '%: % column "%" (%), % rows'' maximum %, sequence %: %',
        CASE WHEN dry_run THEN 'dry run' ELSE 'converting' END, v_kind, col, v_type::pg_catalog.regtype,
        v_qual, COALESCE(v_max::pg_catalog.text, 'none (empty)'), v_seqname,
        CASE WHEN v_ident OPERATOR(pg_catalog.<>) '' THEN 'dropped with the identity'
             WHEN drop_sequence THEN 'dropped' ELSE 'kept' END;

    -- 9. run (unless a dry run) and return every statement
    --    (the first statement, the LOCK, has been run above)
    FOR i IN 1 .. pg_catalog.array_length(v_stmts, 1) LOOP
        IF NOT dry_run AND i OPERATOR(pg_catalog.>) 1 THEN
            EXECUTE v_stmts[i];
        END IF;
        RETURN NEXT v_stmts[i];
    END LOOP;
END
$fn$;
COMMENT ON FUNCTION @extschema@.uid_migrate_key(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool)
    IS 'converts a serial/identity/nextval() key column to DEFAULT snowflake_next() or segment_next(tag) in the caller''s transaction (caller must own the table); returns the statements; dry_run => true runs none';
