-- pg_idgen 0.3.0 -> 0.4.0. Written by hand and reviewed (README "Releasing": the rules for
-- upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.4.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.3.0 checks that a database
-- updated by it has exactly the objects of a fresh 0.4.0 install (tests/upgrade/objects.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.4.0'" to load this file. \quit

-- Each change of 0.4.0 adds its section below, in the form the install script creates it.

-- ---- Segment stride slots: segment_create(..., slots, owned), pg_idgen_segment_slots,
-- segment_slot_release/adopt/status, segment_status.owned_slots. Existing tags keep their rows
-- and values: slotted = false is the nodes/node_index layout (one slot per node).
ALTER TABLE pg_idgen_segments ADD COLUMN slotted bool NOT NULL DEFAULT false;

CREATE TABLE pg_idgen_segment_slots (
    tag   text NOT NULL CHECK (octet_length(tag) BETWEEN 1 AND 63),
    slot  int NOT NULL CHECK (slot BETWEEN 0 AND 255),
    seq   regclass NOT NULL,
    owned bool NOT NULL DEFAULT true,
    PRIMARY KEY (tag, slot)
);
COMMENT ON TABLE pg_idgen_segment_slots IS 'pg_idgen stride slots of segment tags on this node: one row per slot, each backed by its own sequence (seq), owned = served here';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_segment_slots', '');
REVOKE ALL ON pg_idgen_segment_slots FROM PUBLIC;
CREATE TRIGGER pg_idgen_segment_slots_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segment_slots
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();

DROP FUNCTION segment_create(text, int, bigint, int, int, int, int, interval);
CREATE  FUNCTION "segment_create"(
	"tag" TEXT,
	"step" INT DEFAULT 1000,
	"start" bigint DEFAULT 1,
	"nodes" INT DEFAULT 1,
	"node_index" INT DEFAULT 0,
	"min_step" INT DEFAULT NULL,
	"max_step" INT DEFAULT NULL,
	"target_interval" interval DEFAULT NULL,
	"slots" INT DEFAULT NULL,
	"owned" INT[] DEFAULT NULL
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_create_slotted_wrapper';
REVOKE ALL ON FUNCTION segment_create(text, int, bigint, int, int, int, int, interval, int, int[]) FROM PUBLIC;

CREATE  FUNCTION "segment_slot_adopt"(
	"tag" TEXT,
	"slot" INT,
	"mark" bigint
) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_slot_adopt_wrapper';
REVOKE ALL ON FUNCTION segment_slot_adopt(text, int, bigint) FROM PUBLIC;

CREATE  FUNCTION "segment_slot_release"(
	"tag" TEXT,
	"slot" INT
) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_slot_release_wrapper';
REVOKE ALL ON FUNCTION segment_slot_release(text, int) FROM PUBLIC;

CREATE  FUNCTION "segment_slot_status"() RETURNS TABLE (
	"tag" TEXT,
	"slot" INT,
	"slots" INT,
	"owned" bool,
	"persisted_mark" bigint,
	"next_chunk" bigint,
	"chunks_reserved" bigint,
	"refills" bigint,
	"last_installed" bigint
)
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_slot_status_wrapper';

CREATE VIEW segment_slot_status AS
SELECT * FROM segment_slot_status();
COMMENT ON VIEW segment_slot_status IS 'one row per stride slot this node has (a plain tag: its one slot node_index of nodes): owned, durable mark, next chunk, chunks reserved ever, reservations and largest value installed since server start';
GRANT SELECT ON segment_slot_status TO PUBLIC;

CREATE OR REPLACE VIEW segment_status AS
SELECT s.tag,
       coalesce(m.current_step, s.step::bigint) AS step,
       s.nodes, s.node_index,
       p.persisted_hwm,
       m.cursor, m.segment_end, m.next_start, m.next_end,
       coalesce(m.values_issued, 0) AS values_issued,
       coalesce(m.refills, 0) AS refills,
       coalesce(m.sync_refills, 0) AS sync_refills,
       coalesce(m.discarded, 0) AS discarded,
       m.last_refill,
       o.owned_slots
FROM pg_idgen_segments s
LEFT JOIN segment_persisted() p USING (tag)
LEFT JOIN segment_status_shmem() m USING (tag)
LEFT JOIN (SELECT x.tag, pg_catalog.array_agg(x.slot ORDER BY x.slot) AS owned_slots
           FROM segment_slot_status() x WHERE x.owned GROUP BY x.tag) o USING (tag);
-- Keyed sequences (sql/keyed.sql; src/keyed/): keyed_create, keyed_drop, keyed_next,
-- keyed_last, the pg_idgen_keyed_spaces table with its link trigger, the keyed_status view.
CREATE FUNCTION keyed_create(
    space TEXT,
    step INT DEFAULT 1000,
    section_size INT DEFAULT 1000
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_create_wrapper';
CREATE FUNCTION keyed_drop(space TEXT) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_drop_wrapper';
CREATE FUNCTION keyed_status_shmem() RETURNS TABLE (
    space TEXT,
    bound bigint,
    floor bigint,
    raises bigint
)
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_status_shmem_wrapper';
CREATE FUNCTION keyed_next(space text, key bigint) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_next';
CREATE FUNCTION keyed_next(space text, key bigint, n int) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_next_n';
CREATE FUNCTION keyed_last(space text, key bigint) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_last';

CREATE TABLE pg_idgen_keyed_spaces (
    space        text PRIMARY KEY CHECK (octet_length(space) BETWEEN 1 AND 63),
    seq          regclass NOT NULL,
    step         int NOT NULL CHECK (step BETWEEN 1 AND 1000000000),
    section_size int NOT NULL CHECK (section_size BETWEEN 1 AND 1000000000),
    created      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_idgen_keyed_spaces IS 'pg_idgen keyed sequence spaces: one row per space, its durable bound in its own sequence (seq)';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_keyed_spaces', '');
REVOKE ALL ON pg_idgen_keyed_spaces FROM PUBLIC;
-- pg_dump writes no OWNED BY for a sequence of an extension member table: the link is made
-- again when the rows are restored (and by keyed_create's insert).
CREATE FUNCTION pg_idgen_keyed_link() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_link';
REVOKE ALL ON FUNCTION pg_idgen_keyed_link() FROM PUBLIC;
CREATE TRIGGER pg_idgen_keyed_spaces_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_keyed_spaces
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_keyed_link();

CREATE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space);
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, durable bound and floor in memory, bound raises since server start';
GRANT SELECT ON keyed_status TO PUBLIC;

REVOKE ALL ON FUNCTION keyed_create(text, int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION keyed_drop(text) FROM PUBLIC;
COMMENT ON FUNCTION keyed_next(text, bigint) IS 'next value of a key in a keyed space: increasing per key instance-wide, never reissued';
COMMENT ON FUNCTION keyed_next(text, bigint, int) IS 'reserves the next n values of a key (n <= step) and returns the last; the caller owns result-n+1 .. result';
COMMENT ON FUNCTION keyed_last(text, bigint) IS 'a key''s current value without consuming one: no value handed out for it is above it, its next is';

-- ---- Monitoring (docs/monitoring.md): pg_idgen_worker_slots() and the view pg_idgen_metrics,
-- as src/monitor.rs and sql/monitor.sql create them. The monitor worker and its settings
-- (pg_idgen.warn_horizon, pg_idgen.monitor_database, pg_idgen.monitor_interval) come with the
-- 0.4.0 library at the next server start; nothing in the database.
CREATE FUNCTION pg_idgen_worker_slots() RETURNS TABLE (
    used bigint,
    capacity INT
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'pg_idgen_worker_slots_wrapper';

CREATE VIEW @extschema@.pg_idgen_metrics AS
SELECT m.metric, m.labels, m.value, m.type, m.help
FROM (
    SELECT 'pg_idgen_ids_issued_total'::text AS metric,
           pg_catalog.jsonb_build_object('worker_id', s.worker_id::text) AS labels,
           s.ids_issued::float8 AS value, 'counter'::text AS type,
           'Snowflake ids issued since the server started, per worker id'::text AS help
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_logical_clock_lead_seconds', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.lead_ms::float8 / 1000, 'gauge',
           'How far the generator''s logical clock runs ahead of the system clock (negative: behind, idle)'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_clock_steps_back_total', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.steps_back::float8, 'counter', 'Steps back of the system clock seen while generating'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_sequence_exhaustions_total', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.exhaustions::float8, 'counter', 'Times the sequence field of one tick was used up (the clock ran ahead)'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_clock_waits_total', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.waits::float8, 'counter', 'Calls that waited for the system clock (pg_idgen.max_drift_ms reached)'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_time_field_left_seconds', pg_catalog.jsonb_build_object('layout', l.name),
           pg_catalog.date_part('epoch', l.time_field_ends OPERATOR(pg_catalog.-) pg_catalog.now()), 'gauge',
           'Seconds until the time field of the server''s layout ends (snowflake_next() fails from then on)'
    FROM @extschema@.snowflake_layout() l
    UNION ALL
    SELECT 'pg_idgen_worker_slots_used', '{}'::jsonb, w.used::float8, 'gauge',
           'Worker-id slots of the instance in use (a restart frees those whose reservation passed)'
    FROM @extschema@.pg_idgen_worker_slots() w
    UNION ALL
    SELECT 'pg_idgen_worker_slots_capacity', '{}'::jsonb, w.capacity::float8, 'gauge',
           'Worker-id slots of the instance'
    FROM @extschema@.pg_idgen_worker_slots() w
    UNION ALL
    SELECT 'pg_idgen_lease_held', pg_catalog.jsonb_build_object('worker_id', COALESCE(k.worker_id::text, '')),
           CASE WHEN k.state OPERATOR(pg_catalog.=) 'held' THEN 1 ELSE 0 END::float8, 'gauge',
           '1 while this node holds its worker id lease, else 0 (leases on only)'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_state_info', pg_catalog.jsonb_build_object('state', k.state), 1::float8, 'gauge',
           'The lease worker''s state, as a label (value 1)'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_valid_seconds', '{}'::jsonb, k.valid_for_ms::float8 / 1000, 'gauge',
           'Seconds this node may still generate on its lease without a renewal'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_renewals_total', '{}'::jsonb, k.renewals::float8, 'counter', 'Successful lease claims and renewals'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_failures_total', '{}'::jsonb, k.failures::float8, 'counter', 'Lease rounds that failed (registry unreachable or misconfigured)'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_conflicts_total', '{}'::jsonb, k.conflicts::float8, 'counter', 'Lease rounds that found the worker id held by another node'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_refusals_total', '{}'::jsonb, k.refusals::float8, 'counter', 'snowflake_next() calls refused for want of a valid lease'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_segment_values_issued_total', pg_catalog.jsonb_build_object('tag', g.tag),
           g.values_issued::float8, 'counter', 'Values of the segment tag handed out by this instance since the server started'
    FROM @extschema@.segment_status g
    UNION ALL
    SELECT 'pg_idgen_segment_refills_total', pg_catalog.jsonb_build_object('tag', g.tag),
           g.refills::float8, 'counter', 'Segments of the tag reserved since the server started'
    FROM @extschema@.segment_status g
    UNION ALL
    SELECT 'pg_idgen_segment_sync_refills_total', pg_catalog.jsonb_build_object('tag', g.tag),
           g.sync_refills::float8, 'counter', 'Refills a caller had to wait for (both buffers empty)'
    FROM @extschema@.segment_status g
    UNION ALL
    SELECT 'pg_idgen_segment_headroom', pg_catalog.jsonb_build_object('tag', g.tag),
           (9223372036854775807::numeric OPERATOR(pg_catalog.-) COALESCE(g.persisted_hwm, 0))::float8, 'gauge',
           'Values left between the tag''s persisted high-water mark and the largest bigint'
    FROM @extschema@.segment_status g
) m
WHERE m.value IS NOT NULL;
COMMENT ON VIEW @extschema@.pg_idgen_metrics IS 'one row per metric for Prometheus exporters: metric, labels (jsonb), value, type, help; docs/monitoring.md';
GRANT SELECT ON @extschema@.pg_idgen_metrics TO PUBLIC;
COMMENT ON FUNCTION @extschema@.pg_idgen_worker_slots() IS 'worker-id slots of the instance: used (as snowflake_stats() shows them to the caller) and capacity';

-- ---------------------------------------------------------------------------------------------
-- uid_migrate_key: every statement on a table runs as the table's owner, as a security-restricted
-- operation (pg_idgen_migrate_as_owner, src/migrate.rs): a superuser converting a table never
-- runs another role's CHECK constraints or index expressions with its own rights. Children of a
-- converted table with another owner are refused. (The same text as sql/migrate.sql.)
CREATE FUNCTION @extschema@.pg_idgen_migrate_as_owner(tbl pg_catalog.regclass, stmt pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE c VOLATILE PARALLEL UNSAFE
AS 'MODULE_PATHNAME', 'pg_idgen_migrate_as_owner_wrapper';
COMMENT ON FUNCTION @extschema@.pg_idgen_migrate_as_owner(pg_catalog.regclass, pg_catalog.text)
    IS 'internal (uid_migrate_key): runs one statement as the table''s owner in a security-restricted context; the caller must have the owner''s privileges';

CREATE OR REPLACE FUNCTION @extschema@.uid_migrate_key(
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
    v_as       pg_catalog.oid[] := '{}';  -- per statement: the table whose owner runs it, 0: the caller
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
    v_as := v_as OPERATOR(pg_catalog.||) tbl::pg_catalog.oid;

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
        -- the conversion recurses into inheritance children and partitions: their code would run
        -- as this table's owner, so they must have the same one
        SELECT pg_catalog.string_agg(pg_catalog.format('%s (owner %s)', t.rel::pg_catalog.regclass, t.relowner::pg_catalog.regrole), ', ') INTO v_list
          FROM (WITH RECURSIVE tree(rel) AS (
                    SELECT r.rel
                    UNION
                    SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN tree ON i.inhparent OPERATOR(pg_catalog.=) tree.rel)
                SELECT tree.rel, c.relowner FROM tree JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) tree.rel
                 WHERE c.relowner OPERATOR(pg_catalog.<>) r.relowner) t;
        IF v_list IS NOT NULL THEN
            RAISE EXCEPTION 'cannot convert column "%" of table "%" to bigint: these children have another owner: %', r.attname, r.qual, v_list
                USING ERRCODE = '42501',
                      DETAIL = 'The conversion rewrites them too, and their constraints and index expressions would run as the owner of the parent.',
                      HINT = pg_catalog.format('Give them the owner of %s (ALTER TABLE ... OWNER TO), or convert the column to bigint yourself first.', r.qual);
        END IF;
        v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint;', r.qual, r.attname);
        v_as := v_as OPERATOR(pg_catalog.||) r.rel;
    END LOOP;

    -- 7. existing values below every value the new default can produce
    EXECUTE pg_catalog.format('SELECT %I.pg_idgen_migrate_as_owner($1, $2)', v_ext) INTO v_max
        USING tbl, pg_catalog.format('SELECT pg_catalog.max(%I)::pg_catalog.int8 FROM %s', col, v_qual);
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
            v_as := v_as OPERATOR(pg_catalog.||) 0::pg_catalog.oid;
        ELSIF v_max IS NOT NULL THEN
            -- values up to the persisted high-water mark may have been handed out; move past both
            v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('SELECT %I.segment_set(%L, %s);',
                v_ext, tag, GREATEST(v_max, v_hwm) OPERATOR(pg_catalog.+) 1);
            v_as := v_as OPERATOR(pg_catalog.||) 0::pg_catalog.oid;
        END IF;
        v_default := pg_catalog.format('%I.segment_next(%L)', v_ext, tag);
    END IF;

    -- 8. the sequence out, the new DEFAULT in
    IF v_ident OPERATOR(pg_catalog.<>) '' THEN
        v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY;', v_qual, col);
        v_as := v_as OPERATOR(pg_catalog.||) tbl::pg_catalog.oid;
        -- before PostgreSQL 17 a partition can carry an identity of its own
        FOR r IN
            SELECT pg_catalog.format('ALTER TABLE %I.%I ALTER COLUMN %I DROP IDENTITY;', n.nspname, c.relname, col) AS s, c.oid AS rel
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
            v_as := v_as OPERATOR(pg_catalog.||) r.rel;
        END LOOP;
    END IF;
    v_stmts := v_stmts OPERATOR(pg_catalog.||) pg_catalog.format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s;', v_qual, col, v_default);
    v_as := v_as OPERATOR(pg_catalog.||) tbl::pg_catalog.oid;
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
        v_as := v_as OPERATOR(pg_catalog.||) 0::pg_catalog.oid;
    END IF;

    RAISE NOTICE '%: % column "%" (%), % rows'' maximum %, sequence %: %',
        CASE WHEN dry_run THEN 'dry run' ELSE 'converting' END, v_kind, col, v_type::pg_catalog.regtype,
        v_qual, COALESCE(v_max::pg_catalog.text, 'none (empty)'), v_seqname,
        CASE WHEN v_ident OPERATOR(pg_catalog.<>) '' THEN 'dropped with the identity'
             WHEN drop_sequence THEN 'dropped' ELSE 'kept' END;

    -- 9. run (unless a dry run) and return every statement
    --    (the first statement, the LOCK, has been run above); a statement on a table as its owner
    FOR i IN 1 .. pg_catalog.array_length(v_stmts, 1) LOOP
        IF NOT dry_run AND i OPERATOR(pg_catalog.>) 1 THEN
            IF v_as[i] OPERATOR(pg_catalog.<>) 0 THEN
                EXECUTE pg_catalog.format('SELECT %I.pg_idgen_migrate_as_owner($1, $2)', v_ext) USING v_as[i], v_stmts[i];
            ELSE
                EXECUTE v_stmts[i];
            END IF;
        END IF;
        RETURN NEXT v_stmts[i];
    END LOOP;
END
$fn$;
COMMENT ON FUNCTION @extschema@.uid_migrate_key(pg_catalog.regclass, pg_catalog.name, pg_catalog.text, pg_catalog.text, pg_catalog.bool, pg_catalog.bool, pg_catalog.bool)
    IS 'converts a serial/identity/nextval() key column to DEFAULT snowflake_next() or segment_next(tag) in the caller''s transaction (caller must own the table); returns the statements; dry_run => true runs none';

-- ---------------------------------------------------------------------------------------------
-- Parallel labels: the functions that show this backend's state (its worker id and where it
-- comes from, the statistics it may see) or read the extension's tables for monitoring are
-- PARALLEL RESTRICTED (run by the leader only). The tables are read with the statement's snapshot
-- in a parallel operation (src/tables.rs), so decoding with a named layout stays PARALLEL SAFE.
ALTER FUNCTION @extschema@.snowflake_worker() PARALLEL RESTRICTED;
ALTER FUNCTION @extschema@.snowflake_stats() PARALLEL RESTRICTED;
ALTER FUNCTION @extschema@.segment_persisted() PARALLEL RESTRICTED;
ALTER FUNCTION @extschema@.segment_status_shmem() PARALLEL RESTRICTED;

-- ---- Segment slot ownership through the lease registry: segment_create(..., registry),
-- pg_idgen_segments.registry (false for existing tags: explicit hand-over), and the registry's
-- side: pg_idgen_segment_owners and segment_registry_assign/move/rebalance/drain
-- (sql/segment_registry.sql, src/lease/slots.rs, src/segment/owners.rs).
ALTER TABLE pg_idgen_segments ADD COLUMN registry bool NOT NULL DEFAULT false;

DROP FUNCTION segment_create(text, int, bigint, int, int, int, int, interval, int, int[]);
CREATE  FUNCTION "segment_create"(
	"tag" TEXT,
	"step" INT DEFAULT 1000,
	"start" bigint DEFAULT 1,
	"nodes" INT DEFAULT 1,
	"node_index" INT DEFAULT 0,
	"min_step" INT DEFAULT NULL,
	"max_step" INT DEFAULT NULL,
	"target_interval" interval DEFAULT NULL,
	"slots" INT DEFAULT NULL,
	"owned" INT[] DEFAULT NULL,
	"registry" bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_create_slotted_wrapper';
REVOKE ALL ON FUNCTION segment_create(text, int, bigint, int, int, int, int, interval, int, int[], bool) FROM PUBLIC;

CREATE  FUNCTION "segment_slot_leases"() RETURNS TABLE (
	"tag" TEXT,
	"slot" INT,
	"first_value" bigint,
	"last_value" bigint,
	"serving" bool
)
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_slot_leases_wrapper';

CREATE TABLE pg_idgen_segment_owners (
    tag         text NOT NULL CHECK (octet_length(tag) BETWEEN 1 AND 63),
    slot        int NOT NULL,
    slots       int NOT NULL CHECK (slots BETWEEN 1 AND 256),
    owner       int NOT NULL CHECK (owner >= 0),
    owner_token bigint,
    state       text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'moving', 'released')),
    move_to     int CHECK (move_to >= 0),
    ceiling     bigint NOT NULL DEFAULT 0,
    floor       bigint NOT NULL DEFAULT 0,
    changed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tag, slot),
    CHECK (slot >= 0 AND slot < slots),
    CHECK (floor >= 0 AND floor <= ceiling),
    CHECK ((state = 'held') = (move_to IS NULL))
);
COMMENT ON TABLE pg_idgen_segment_owners IS 'segment stride slots owned through this lease registry: owner worker id, state, and the chunks the owners may hand out (pg_idgen)';
COMMENT ON COLUMN pg_idgen_segment_owners.ceiling IS 'chunks of the slot: no owner handed out chunk ceiling or above; raised by the owner while its lease is valid';
COMMENT ON COLUMN pg_idgen_segment_owners.floor IS 'the ceiling when the current owner took the slot: it continues at this chunk';
REVOKE ALL ON pg_idgen_segment_owners FROM PUBLIC;

CREATE FUNCTION segment_registry_assign(tag text, slots int, worker_ids int[]) RETURNS int
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    n int;
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_assign: tag, slots and worker_ids must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF octet_length($1) NOT BETWEEN 1 AND 63 THEN
        RAISE EXCEPTION 'segment tag must have 1 to 63 bytes' USING ERRCODE = '22023';
    END IF;
    IF $2 NOT BETWEEN 1 AND 256 THEN
        RAISE EXCEPTION 'slots must be between 1 and 256, got %', $2 USING ERRCODE = '22023';
    END IF;
    n := coalesce(array_length($3, 1), 0);
    IF n = 0 OR array_position($3, NULL) IS NOT NULL OR EXISTS (SELECT FROM unnest($3) w WHERE w < 0)
       OR (SELECT count(DISTINCT w) FROM unnest($3) w) <> n THEN
        RAISE EXCEPTION 'worker_ids must be distinct worker ids (0 or more), at least one'
            USING ERRCODE = '22023', HINT = 'The worker ids the nodes lease: SELECT worker_id FROM snowflake_lease() on each node.';
    END IF;
    LOCK TABLE @extschema@.pg_idgen_segment_owners IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o WHERE o.tag = $1) THEN
        RAISE EXCEPTION 'segment tag "%" already has slots in the registry', $1
            USING ERRCODE = '42710', HINT = 'Move slots with segment_registry_move or segment_registry_rebalance.';
    END IF;
    INSERT INTO @extschema@.pg_idgen_segment_owners (tag, slot, slots, owner)
    SELECT $1, s, $2, $3[1 + s % n] FROM generate_series(0, $2 - 1) s;
    RETURN $2;
END
$fn$;

CREATE FUNCTION segment_registry_move(tag text, slot int, to_worker int) RETURNS text
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    r record;
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_move: tag, slot and to_worker must not be NULL' USING ERRCODE = '22004';
    END IF;
    SELECT o.owner, o.state, o.move_to INTO r FROM @extschema@.pg_idgen_segment_owners o
     WHERE o.tag = $1 AND o.slot = $2 FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'segment tag "%" has no slot % in the registry', $1, $2
            USING ERRCODE = '42704', HINT = 'Assign the tag''s slots first: segment_registry_assign(tag, slots, worker_ids).';
    END IF;
    IF r.state = 'held' AND r.owner = $3 THEN
        RETURN 'held';
    END IF;
    IF r.state = 'moving' AND r.owner = $3 THEN
        -- back to its owner before it let go: the move is cancelled
        UPDATE @extschema@.pg_idgen_segment_owners o SET state = 'held', move_to = NULL, changed_at = now()
         WHERE o.tag = $1 AND o.slot = $2;
        RETURN 'held';
    END IF;
    IF r.state <> 'held' THEN
        IF r.move_to = $3 THEN
            RETURN r.state;
        END IF;
        IF EXISTS (SELECT FROM @extschema@.pg_idgen_leases l WHERE l.worker_id = r.move_to
                    AND l.released_at IS NULL AND l.lease_until > now()) THEN
            RAISE EXCEPTION 'slot % of segment tag "%" is already moving to worker id %', $2, $1, r.move_to
                USING ERRCODE = '55000', HINT = 'Wait until that worker id took it (state held), then move it again.';
        END IF;
        -- its target holds no lease any more: the move goes elsewhere
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_leases l WHERE l.worker_id = $3
                    AND l.released_at IS NULL AND l.lease_until > now()) THEN
        RAISE EXCEPTION 'worker id % holds no lease in this registry', $3
            USING ERRCODE = '55000', HINT = 'Slots move to a running node: SELECT worker_id FROM snowflake_lease() on it.';
    END IF;
    UPDATE @extschema@.pg_idgen_segment_owners o
       SET state = CASE WHEN o.state = 'held' THEN 'moving' ELSE o.state END, move_to = $3, changed_at = now()
     WHERE o.tag = $1 AND o.slot = $2
    RETURNING o.state INTO r;
    RETURN r.state;
END
$fn$;

CREATE FUNCTION segment_registry_rebalance(tag text, to_worker int, k int)
    RETURNS TABLE (slot int, from_worker int)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    v_from int;
    v_slot int;
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_rebalance: tag, to_worker and k must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF $3 < 0 THEN
        RAISE EXCEPTION 'k must not be negative, got %', $3 USING ERRCODE = '22023';
    END IF;
    LOCK TABLE @extschema@.pg_idgen_segment_owners IN SHARE ROW EXCLUSIVE MODE;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o WHERE o.tag = $1) THEN
        RAISE EXCEPTION 'segment tag "%" has no slots in the registry', $1 USING ERRCODE = '42704';
    END IF;
    FOR i IN 1 .. $3 LOOP
        -- the worker id with the most slots (pending moves count for their target), its
        -- highest held slot; ties: the lowest worker id
        SELECT o.owner, max(o.slot) INTO v_from, v_slot
          FROM @extschema@.pg_idgen_segment_owners o
         WHERE o.tag = $1 AND o.state = 'held' AND o.owner <> $2
         GROUP BY o.owner
         ORDER BY (SELECT count(*) FROM @extschema@.pg_idgen_segment_owners x
                    WHERE x.tag = $1 AND coalesce(x.move_to, x.owner) = o.owner) DESC, o.owner
         LIMIT 1;
        EXIT WHEN NOT FOUND;
        PERFORM @extschema@.segment_registry_move($1, v_slot, $2);
        slot := v_slot;
        from_worker := v_from;
        RETURN NEXT;
    END LOOP;
END
$fn$;

CREATE FUNCTION segment_registry_drain(tag text, from_worker int)
    RETURNS TABLE (slot int, to_worker int)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    v_slot int;
    v_to int;
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_drain: tag and from_worker must not be NULL' USING ERRCODE = '22004';
    END IF;
    LOCK TABLE @extschema@.pg_idgen_segment_owners IN SHARE ROW EXCLUSIVE MODE;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o WHERE o.tag = $1) THEN
        RAISE EXCEPTION 'segment tag "%" has no slots in the registry', $1 USING ERRCODE = '42704';
    END IF;
    FOR v_slot IN SELECT o.slot FROM @extschema@.pg_idgen_segment_owners o
                   WHERE o.tag = $1 AND o.owner = $2 AND o.state = 'held' ORDER BY o.slot LOOP
        -- to the other worker id with a live lease that has the fewest slots (pending moves
        -- count for their target); ties: the lowest worker id
        SELECT w INTO v_to FROM (
            SELECT coalesce(x.move_to, x.owner) AS w, count(*) AS c
              FROM @extschema@.pg_idgen_segment_owners x WHERE x.tag = $1
             GROUP BY 1) t
         WHERE w <> $2 AND EXISTS (SELECT FROM @extschema@.pg_idgen_leases l WHERE l.worker_id = t.w
                                     AND l.released_at IS NULL AND l.lease_until > now())
         ORDER BY c, w LIMIT 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no other worker id with a live lease holds slots of segment tag "%"', $1
                USING ERRCODE = '55000', HINT = 'Move slots to a running node with segment_registry_move(tag, slot, worker_id).';
        END IF;
        PERFORM @extschema@.segment_registry_move($1, v_slot, v_to);
        slot := v_slot;
        to_worker := v_to;
        RETURN NEXT;
    END LOOP;
END
$fn$;

REVOKE ALL ON FUNCTION segment_registry_assign(text, int, int[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_registry_move(text, int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_registry_rebalance(text, int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_registry_drain(text, int) FROM PUBLIC;
COMMENT ON FUNCTION segment_registry_assign(text, int, int[]) IS 'registry: gives the slots of a registry-owned segment tag to worker ids, round robin';
COMMENT ON FUNCTION segment_registry_move(text, int, int) IS 'registry: moves a slot to a worker id; the owner stops serving it, then the target takes it above its ceiling';
COMMENT ON FUNCTION segment_registry_rebalance(text, int, int) IS 'registry: moves k slots to a worker id from the worker ids that have the most';
COMMENT ON FUNCTION segment_registry_drain(text, int) IS 'registry: moves every slot of a worker id to the others, each to the one that has the fewest';
