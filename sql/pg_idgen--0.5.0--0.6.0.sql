-- pg_idgen 0.5.0 -> 0.6.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.6.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.5.0
-- (tests/upgrade/extension_update_050.sh) checks that a database updated by it has exactly the
-- objects of a fresh 0.6.0 install (tests/upgrade/objects.sql) and that nothing of the extension
-- binds a function, operator or type outside pg_catalog and the extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.6.0'" to load this file. \quit

-- Each change of 0.6.0 adds its section below, in the form the install script creates it.

-- ---------------------------------------------------------------------------------------------
-- The columns naming a backing sequence become pg_idgen_regclass (sql/regclass.sql): regclass,
-- except that a logical replication worker reads a name that does not exist as 0, so a row of
-- pg_idgen's tables from another node is skipped by the guard trigger instead of stopping the
-- subscription (42P01). The link triggers name the column (UPDATE OF seq) and keyed_status
-- reads it: both are made again around the change of type.
CREATE TYPE pg_idgen_regclass;
CREATE FUNCTION pg_idgen_regclass_in(cstring) RETURNS pg_idgen_regclass
    STRICT STABLE PARALLEL SAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_regclass_in';
CREATE FUNCTION pg_idgen_regclass_out(pg_idgen_regclass) RETURNS cstring
    STRICT STABLE PARALLEL SAFE LANGUAGE internal AS 'regclassout';
CREATE FUNCTION pg_idgen_regclass_recv(internal) RETURNS pg_idgen_regclass
    STRICT IMMUTABLE PARALLEL SAFE LANGUAGE internal AS 'oidrecv';
CREATE FUNCTION pg_idgen_regclass_send(pg_idgen_regclass) RETURNS bytea
    STRICT IMMUTABLE PARALLEL SAFE LANGUAGE internal AS 'oidsend';
CREATE TYPE pg_idgen_regclass (
    INPUT = pg_idgen_regclass_in, OUTPUT = pg_idgen_regclass_out,
    RECEIVE = pg_idgen_regclass_recv, SEND = pg_idgen_regclass_send,
    INTERNALLENGTH = 4, PASSEDBYVALUE, ALIGNMENT = int4, STORAGE = plain
);
COMMENT ON TYPE pg_idgen_regclass IS 'pg_idgen: regclass naming a backing sequence, except that a logical replication worker reads a name that does not exist as 0 (the row is then skipped by pg_idgen_replica_guard) instead of stopping the subscription';
-- Type input and output functions are called without a privilege check; nobody calls them directly.
REVOKE ALL ON FUNCTION pg_idgen_regclass_in(cstring) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_regclass_out(pg_idgen_regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_regclass_recv(internal) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_regclass_send(pg_idgen_regclass) FROM PUBLIC;
CREATE CAST (pg_idgen_regclass AS pg_catalog.regclass) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (pg_catalog.regclass AS pg_idgen_regclass) WITHOUT FUNCTION AS ASSIGNMENT;
CREATE CAST (pg_idgen_regclass AS pg_catalog.oid) WITHOUT FUNCTION AS IMPLICIT;
CREATE CAST (pg_catalog.oid AS pg_idgen_regclass) WITHOUT FUNCTION AS ASSIGNMENT;
DROP VIEW keyed_status;
DROP TRIGGER pg_idgen_segments_link ON pg_idgen_segments;
DROP TRIGGER pg_idgen_segment_slots_link ON pg_idgen_segment_slots;
DROP TRIGGER pg_idgen_keyed_spaces_link ON pg_idgen_keyed_spaces;
ALTER TABLE pg_idgen_segments ALTER COLUMN seq TYPE pg_idgen_regclass;
ALTER TABLE pg_idgen_segment_slots ALTER COLUMN seq TYPE pg_idgen_regclass;
ALTER TABLE pg_idgen_keyed_spaces ALTER COLUMN seq TYPE pg_idgen_regclass;
CREATE TRIGGER pg_idgen_segments_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segments
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();
CREATE TRIGGER pg_idgen_segment_slots_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segment_slots
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();
CREATE TRIGGER pg_idgen_keyed_spaces_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_keyed_spaces
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_keyed_link();
CREATE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner, c.relacl AS privileges,
       s.nodes, s.node_index,
       (SELECT LEAST(pg_catalog.max(b.bound),
                     (9223372036854775807 OPERATOR(pg_catalog.-) coalesce(s.node_index, 0))
                     OPERATOR(pg_catalog./) coalesce(s.nodes, 1))
               OPERATOR(pg_catalog.*) coalesce(s.nodes, 1) OPERATOR(pg_catalog.+) coalesce(s.node_index, 0)
          FROM pg_idgen_keyed_bounds b WHERE b.space OPERATOR(pg_catalog.=) s.space) AS max_value,
       s.registry
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space)
LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.seq::pg_catalog.oid;
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, highest durable bound and floor in memory, bound raises since server start, owner and privileges (USAGE: keyed_next, keyed_last), fleet mode''s nodes and node_index, and max_value: no value this node handed out for any key of the space is above it (its durable bounds), and whether bounds are raised through the lease registry';
REVOKE ALL ON keyed_status FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON keyed_status TO PUBLIC;

-- ---------------------------------------------------------------------------------------------
-- Moving to a new cluster: pg_idgen_state_export() and pg_idgen_state_import(state) (sql/move.sql)
-- and the three functions they call (src/snowflake.rs, src/keyed/admin.rs), as the install
-- script makes them.
CREATE FUNCTION "pg_idgen_keyed_raise_bounds"(
	"space" TEXT, /* Option < & str > */
	"bounds" bigint[] /* :: std :: option :: Option < Vec < Option < i64 > > > */
) RETURNS INT /* i32 */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pg_idgen_keyed_raise_bounds_wrapper';
CREATE FUNCTION "pg_idgen_snowflake_marks"() RETURNS TABLE (
	"worker_id" bigint,  /* Option < i64 > */
	"until_ms" bigint  /* i64 */
)
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pg_idgen_snowflake_marks_wrapper';
CREATE FUNCTION "pg_idgen_snowflake_raise_floor"(
	"worker_id" bigint, /* Option < i64 > */
	"until_ms" bigint /* Option < i64 > */
) RETURNS bool /* bool */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pg_idgen_snowflake_raise_floor_wrapper';
CREATE FUNCTION pg_idgen_state_export() RETURNS jsonb
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    state jsonb;
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = 'permission denied to export pg_idgen''s state',
            HINT = 'Only a superuser can run pg_idgen_state_export(): it carries the mask keys.';
    END IF;
    SELECT pg_catalog.jsonb_build_object(
        'format', 1,
        'extversion', (SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'pg_idgen'),
        'system_identifier', (SELECT s.system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system() s),
        'server_version_num', pg_catalog.current_setting('server_version_num'),
        'database', pg_catalog.current_database(),
        'exported_at', pg_catalog.clock_timestamp(),
        'server_layout', (SELECT l.spec FROM @extschema@.snowflake_layout() l),
        'worker_id', (SELECT w.worker_id FROM @extschema@.pg_idgen_worker w),
        'snowflake', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('worker_id', m.worker_id, 'until_ms', m.until_ms)
                                                   ORDER BY m.worker_id NULLS LAST)
                                 FROM @extschema@.pg_idgen_snowflake_marks() m), '[]'),
        'segments', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'tag', s.tag, 'step', s.step, 'unit', s.unit, 'start', s.start, 'nodes', s.nodes,
                'node_index', s.node_index, 'min_step', s.min_step, 'max_step', s.max_step,
                'target_interval', s.target_interval::pg_catalog.text, 'slotted', s.slotted,
                'registry', s.registry, 'registry_marks', s.registry_marks,
                'kind', CASE WHEN s.registry THEN 'registry' WHEN s.slotted THEN 'slotted'
                             WHEN s.nodes OPERATOR(pg_catalog.>) 1 THEN 'strided' ELSE 'plain' END,
                'hwm', p.persisted_hwm,
                'slots', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('slot', x.slot, 'owned', x.owned, 'mark', x.persisted_mark) ORDER BY x.slot)
                                     FROM @extschema@.segment_slot_status() x
                                    WHERE s.slotted AND x.tag OPERATOR(pg_catalog.=) s.tag), '[]'::pg_catalog.jsonb))
                ORDER BY s.tag)
              FROM @extschema@.pg_idgen_segments s
              LEFT JOIN @extschema@.segment_persisted() p ON p.tag OPERATOR(pg_catalog.=) s.tag), '[]'),
        'keyed', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'space', k.space, 'step', k.step, 'section_size', k.section_size, 'nodes', k.nodes,
                'node_index', k.node_index, 'registry', k.registry,
                'bounds', (SELECT pg_catalog.jsonb_agg(b.bound ORDER BY b.bucket) FROM @extschema@.pg_idgen_keyed_bounds b
                            WHERE b.space OPERATOR(pg_catalog.=) k.space),
                'usage', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                     'grantee', CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'public'
                                                     ELSE pg_catalog.pg_get_userbyid(a.grantee)::pg_catalog.text END,
                                     'grant_option', a.is_grantable) ORDER BY a.grantee)
                            FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
                           WHERE c.oid OPERATOR(pg_catalog.=) k.seq::pg_catalog.oid
                             AND a.privilege_type OPERATOR(pg_catalog.=) 'USAGE'
                             AND a.grantee OPERATOR(pg_catalog.<>) c.relowner), '[]'::pg_catalog.jsonb))
                ORDER BY k.space)
              FROM @extschema@.pg_idgen_keyed_spaces k), '[]'),
        'layouts', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'name', l.name, 'epoch', l.epoch, 'unit_ms', l.unit_ms, 'time_bits', l.time_bits,
                'worker_bits', l.worker_bits, 'sequence_bits', l.sequence_bits, 'field_order', l.field_order,
                'worker_low_bits', l.worker_low_bits) ORDER BY l.name)
              FROM @extschema@.pg_idgen_layouts l), '[]'),
        'mask_keys', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'name', m.name, 'version', m.version, 'key', pg_catalog.encode(m.key, 'hex'), 'in_use', m.in_use,
                'created_at', m.created_at, 'created_by', m.created_by, 'dropped_at', m.dropped_at) ORDER BY m.name, m.version)
              FROM @extschema@.pg_idgen_mask_keys m), '[]')
    ) INTO state;
    RETURN state;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_state_export() FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_state_export() IS 'moving to a new cluster: this database''s pg_idgen state (segment tags and marks, keyed spaces and bounds, snowflake reservations of the instance, layouts, mask keys) for pg_idgen_state_import on the new cluster (superuser)';

CREATE FUNCTION pg_idgen_state_import(state jsonb)
    RETURNS TABLE (object text, name text, action text)
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    e jsonb;
    x jsonb;
    have record;
    n bigint;
    mine bigint;
    mark bigint;
    s_unit bigint;
    s_start bigint;
    new_hwm bigint;
    diff text;
    ahead bool;
    created bool;
BEGIN
    IF NOT (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER) THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = 'permission denied to import pg_idgen''s state',
            HINT = 'Only a superuser can run pg_idgen_state_import().';
    END IF;
    IF state IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed', MESSAGE = 'argument "state" must not be NULL';
    END IF;
    IF pg_catalog.jsonb_typeof(state) OPERATOR(pg_catalog.<>) 'object'
       OR (state OPERATOR(pg_catalog.->>) 'format') IS DISTINCT FROM '1' THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'not a state exported by pg_idgen_state_export() (format 1)';
    END IF;
    IF (state OPERATOR(pg_catalog.->>) 'system_identifier') OPERATOR(pg_catalog.=)
       (SELECT s.system_identifier::pg_catalog.text FROM pg_catalog.pg_control_system() s)
       AND (state OPERATOR(pg_catalog.->>) 'database') OPERATOR(pg_catalog.=) pg_catalog.current_database() THEN
        RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value',
            MESSAGE = 'this state was exported from this very database',
            HINT = 'Import it on the new cluster.';
    END IF;

    -- 1. The server layout: ids of two layouts can collide and decode differently.
    IF (state OPERATOR(pg_catalog.->>) 'server_layout') IS DISTINCT FROM (SELECT l.spec FROM @extschema@.snowflake_layout() l) THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('the old cluster runs pg_idgen.layout %s, this one %s',
                                        state OPERATOR(pg_catalog.->>) 'server_layout',
                                        (SELECT l.spec FROM @extschema@.snowflake_layout() l)),
            HINT = 'Set pg_idgen.layout on the new cluster as on the old one and restart it.';
    END IF;

    -- 2. Custom layouts: copied where missing, compared where present.
    FOR e IN SELECT * FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'layouts') LOOP
        SELECT l.* INTO have FROM @extschema@.pg_idgen_layouts l WHERE l.name OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'name');
        IF NOT FOUND THEN
            PERFORM @extschema@.uid_layout_register(e OPERATOR(pg_catalog.->>) 'name',
                (e OPERATOR(pg_catalog.->>) 'epoch')::pg_catalog.timestamptz,
                (e OPERATOR(pg_catalog.->>) 'time_bits')::pg_catalog.int4,
                (e OPERATOR(pg_catalog.->>) 'worker_bits')::pg_catalog.int4,
                (e OPERATOR(pg_catalog.->>) 'sequence_bits')::pg_catalog.int4,
                unit_ms => (e OPERATOR(pg_catalog.->>) 'unit_ms')::pg_catalog.int4,
                field_order => e OPERATOR(pg_catalog.->>) 'field_order',
                worker_low_bits => (e OPERATOR(pg_catalog.->>) 'worker_low_bits')::pg_catalog.int4);
            object := 'layout'; name := e OPERATOR(pg_catalog.->>) 'name'; action := 'registered'; RETURN NEXT;
        ELSIF have.epoch IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'epoch')::pg_catalog.timestamptz
           OR have.unit_ms IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'unit_ms')::pg_catalog.int4
           OR have.time_bits IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'time_bits')::pg_catalog.int4
           OR have.worker_bits IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'worker_bits')::pg_catalog.int4
           OR have.sequence_bits IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'sequence_bits')::pg_catalog.int4
           OR have.field_order IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'field_order')
           OR have.worker_low_bits IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'worker_low_bits')::pg_catalog.int4 THEN
            RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = pg_catalog.format('layout "%s" differs between the old cluster and this one', have.name),
                HINT = 'Ids decode differently with it on the two clusters: drop it here (uid_layout_drop) and import again, or register it under another name.';
        ELSE
            object := 'layout'; name := have.name; action := 'equal'; RETURN NEXT;
        END IF;
    END LOOP;

    -- 3. Mask keys: copied where missing (the catalog trigger makes every session reload them),
    -- compared where present: a masked id must unmask to the same id on both clusters.
    FOR e IN SELECT * FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'mask_keys') LOOP
        SELECT m.* INTO have FROM @extschema@.pg_idgen_mask_keys m
         WHERE m.name OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'name')
           AND m.version OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'version')::pg_catalog.int4;
        IF NOT FOUND THEN
            INSERT INTO @extschema@.pg_idgen_mask_keys (name, version, key, in_use, created_at, created_by, dropped_at)
            VALUES (e OPERATOR(pg_catalog.->>) 'name', (e OPERATOR(pg_catalog.->>) 'version')::pg_catalog.int4,
                    pg_catalog.decode(e OPERATOR(pg_catalog.->>) 'key', 'hex'), (e OPERATOR(pg_catalog.->>) 'in_use')::pg_catalog.bool,
                    (e OPERATOR(pg_catalog.->>) 'created_at')::pg_catalog.timestamptz, e OPERATOR(pg_catalog.->>) 'created_by',
                    (e OPERATOR(pg_catalog.->>) 'dropped_at')::pg_catalog.timestamptz);
            object := 'mask key'; name := pg_catalog.format('%s v%s', e OPERATOR(pg_catalog.->>) 'name', e OPERATOR(pg_catalog.->>) 'version');
            action := 'copied'; RETURN NEXT;
        ELSIF have.key IS NOT NULL AND (e OPERATOR(pg_catalog.->>) 'key') IS NOT NULL
              AND have.key IS DISTINCT FROM pg_catalog.decode(e OPERATOR(pg_catalog.->>) 'key', 'hex') THEN
            RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = pg_catalog.format('mask key "%s" version %s differs between the old cluster and this one', have.name, have.version),
                DETAIL = 'Ids masked on one cluster would unmask to other ids on the other.',
                HINT = 'Make the keys equal before the move (docs/public-ids.md): the new cluster''s own key of that name must go.';
        ELSE
            object := 'mask key'; name := pg_catalog.format('%s v%s', have.name, have.version); action := 'equal'; RETURN NEXT;
        END IF;
    END LOOP;

    -- 4. Snowflake: every worker id the old instance generated for continues above its
    -- reservation here; the old floor covers the worker ids it had no slot for.
    FOR e IN SELECT * FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'snowflake') LOOP
        ahead := @extschema@.pg_idgen_snowflake_raise_floor((e OPERATOR(pg_catalog.->>) 'worker_id')::pg_catalog.int8,
                                                             (e OPERATOR(pg_catalog.->>) 'until_ms')::pg_catalog.int8);
        object := 'snowflake'; name := coalesce('worker ' OPERATOR(pg_catalog.||) (e OPERATOR(pg_catalog.->>) 'worker_id'), 'floor');
        action := pg_catalog.format('at or above %s', pg_catalog.to_timestamp(((e OPERATOR(pg_catalog.->>) 'until_ms')::pg_catalog.numeric) OPERATOR(pg_catalog./) 1000));
        RETURN NEXT;
    END LOOP;
    IF (state OPERATOR(pg_catalog.->>) 'worker_id') IS NOT NULL
       AND NOT EXISTS (SELECT FROM @extschema@.pg_idgen_worker) THEN
        PERFORM @extschema@.set_worker_id((state OPERATOR(pg_catalog.->>) 'worker_id')::pg_catalog.int4);
        object := 'worker id'; name := state OPERATOR(pg_catalog.->>) 'worker_id'; action := 'set'; RETURN NEXT;
    END IF;

    -- 5. Segment tags.
    FOR e IN SELECT * FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'segments') LOOP
        SELECT s.* INTO have FROM @extschema@.pg_idgen_segments s WHERE s.tag OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'tag');
        created := NOT FOUND;
        IF created THEN
            IF (e OPERATOR(pg_catalog.->>) 'slotted')::pg_catalog.bool THEN
                PERFORM @extschema@.segment_create(e OPERATOR(pg_catalog.->>) 'tag',
                    step => (e OPERATOR(pg_catalog.->>) 'step')::pg_catalog.int4,
                    start => (e OPERATOR(pg_catalog.->>) 'start')::pg_catalog.int8,
                    min_step => (e OPERATOR(pg_catalog.->>) 'min_step')::pg_catalog.int4,
                    max_step => (e OPERATOR(pg_catalog.->>) 'max_step')::pg_catalog.int4,
                    target_interval => (e OPERATOR(pg_catalog.->>) 'target_interval')::pg_catalog.interval,
                    slots => (e OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4,
                    owned => CASE WHEN (e OPERATOR(pg_catalog.->>) 'registry')::pg_catalog.bool THEN NULL ELSE '{}'::pg_catalog.int4[] END,
                    registry => (e OPERATOR(pg_catalog.->>) 'registry')::pg_catalog.bool,
                    registry_marks => (e OPERATOR(pg_catalog.->>) 'registry_marks')::pg_catalog.bool);
            ELSE
                PERFORM @extschema@.segment_create(e OPERATOR(pg_catalog.->>) 'tag',
                    step => (e OPERATOR(pg_catalog.->>) 'step')::pg_catalog.int4,
                    start => (e OPERATOR(pg_catalog.->>) 'start')::pg_catalog.int8,
                    nodes => (e OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4,
                    node_index => (e OPERATOR(pg_catalog.->>) 'node_index')::pg_catalog.int4,
                    min_step => (e OPERATOR(pg_catalog.->>) 'min_step')::pg_catalog.int4,
                    max_step => (e OPERATOR(pg_catalog.->>) 'max_step')::pg_catalog.int4,
                    target_interval => (e OPERATOR(pg_catalog.->>) 'target_interval')::pg_catalog.interval,
                    registry_marks => (e OPERATOR(pg_catalog.->>) 'registry_marks')::pg_catalog.bool);
            END IF;
            SELECT s.* INTO have FROM @extschema@.pg_idgen_segments s WHERE s.tag OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'tag');
        END IF;
        -- The values' arithmetic must be the same (or they could collide): start, unit, stride
        -- and kind. A strided tag may sit at another node_index here (its values stay its own).
        diff := NULL;
        IF have.start IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'start')::pg_catalog.int8 THEN diff := 'start';
        ELSIF have.unit IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'unit')::pg_catalog.int4 THEN diff := 'unit (step or min_step)';
        ELSIF have.nodes IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4 THEN diff := 'nodes or slots';
        ELSIF have.slotted IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'slotted')::pg_catalog.bool
           OR have.registry IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'registry')::pg_catalog.bool THEN diff := 'kind';
        END IF;
        IF diff IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = pg_catalog.format('segment tag "%s" differs between the old cluster and this one: %s', have.tag, diff),
                HINT = 'Drop the tag here (segment_drop) and import again: it is then created as on the old cluster.';
        END IF;
        object := 'segment tag'; name := have.tag;
        IF have.registry THEN
            -- Slots owned through the registry: a node that takes a slot continues above the
            -- ceiling the registry recorded for its previous owner.
            action := CASE WHEN created THEN 'created (registry-owned: move its slots to this node''s worker id on the registry)'
                           ELSE 'registry-owned: its slots continue above the registry''s ceilings' END;
            RETURN NEXT;
        ELSIF have.slotted THEN
            action := CASE WHEN created THEN 'created' ELSE 'present' END;
            s_unit := have.unit; s_start := have.start;
            FOR x IN SELECT * FROM pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof(e OPERATOR(pg_catalog.->) 'slots') OPERATOR(pg_catalog.=) 'array'
                                                                      THEN e OPERATOR(pg_catalog.->) 'slots' ELSE '[]' END)
                      WHERE (value OPERATOR(pg_catalog.->>) 'owned')::pg_catalog.bool LOOP
                n := (x OPERATOR(pg_catalog.->>) 'slot')::pg_catalog.int8;
                -- nothing handed out yet: the value just below the slot's first chunk
                mark := coalesce((x OPERATOR(pg_catalog.->>) 'mark')::pg_catalog.int8,
                                 s_start OPERATOR(pg_catalog.+) n OPERATOR(pg_catalog.*) s_unit OPERATOR(pg_catalog.-) 1);
                SELECT st.owned, st.persisted_mark INTO have FROM @extschema@.segment_slot_status() st
                 WHERE st.tag OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'tag') AND st.slot OPERATOR(pg_catalog.=) n;
                IF FOUND AND have.owned AND have.persisted_mark IS NOT NULL AND have.persisted_mark OPERATOR(pg_catalog.>=) mark THEN
                    CONTINUE;  -- already above
                END IF;
                IF FOUND AND have.owned THEN
                    mine := @extschema@.segment_slot_release(e OPERATOR(pg_catalog.->>) 'tag', n::pg_catalog.int4);
                    mark := GREATEST(mark, mine);
                ELSIF FOUND AND have.persisted_mark IS NOT NULL THEN
                    mark := GREATEST(mark, have.persisted_mark);
                END IF;
                PERFORM @extschema@.segment_slot_adopt(e OPERATOR(pg_catalog.->>) 'tag', n::pg_catalog.int4, mark);
                action := action OPERATOR(pg_catalog.||) pg_catalog.format(', slot %s above %s', n, mark);
            END LOOP;
            RETURN NEXT;
        ELSE
            SELECT p.persisted_hwm INTO new_hwm FROM @extschema@.segment_persisted() p WHERE p.tag OPERATOR(pg_catalog.=) have.tag;
            mark := (e OPERATOR(pg_catalog.->>) 'hwm')::pg_catalog.int8;
            IF mark IS NOT NULL AND (new_hwm IS NULL OR new_hwm OPERATOR(pg_catalog.<) mark) THEN
                n := @extschema@.segment_set(have.tag, mark OPERATOR(pg_catalog.+) 1);
                action := pg_catalog.format('%s, continues at %s (old high-water mark %s)', CASE WHEN created THEN 'created' ELSE 'present' END, n, mark);
            ELSE
                action := pg_catalog.format('%s, already above the old high-water mark %s', CASE WHEN created THEN 'created' ELSE 'present' END, coalesce(mark::pg_catalog.text, '(none)'));
            END IF;
            RETURN NEXT;
        END IF;
    END LOOP;

    -- 6. Keyed spaces.
    FOR e IN SELECT * FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'keyed') LOOP
        SELECT k.* INTO have FROM @extschema@.pg_idgen_keyed_spaces k WHERE k.space OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'space');
        created := NOT FOUND;
        IF created THEN
            PERFORM @extschema@.keyed_create(e OPERATOR(pg_catalog.->>) 'space',
                step => (e OPERATOR(pg_catalog.->>) 'step')::pg_catalog.int4,
                section_size => (e OPERATOR(pg_catalog.->>) 'section_size')::pg_catalog.int4,
                nodes => (e OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4,
                node_index => (e OPERATOR(pg_catalog.->>) 'node_index')::pg_catalog.int4,
                registry => (e OPERATOR(pg_catalog.->>) 'registry')::pg_catalog.bool);
            SELECT k.* INTO have FROM @extschema@.pg_idgen_keyed_spaces k WHERE k.space OPERATOR(pg_catalog.=) (e OPERATOR(pg_catalog.->>) 'space');
        ELSIF have.step IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'step')::pg_catalog.int4
           OR have.section_size IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'section_size')::pg_catalog.int4
           OR have.nodes IS DISTINCT FROM (e OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4 THEN
            RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = pg_catalog.format('keyed space "%s" differs between the old cluster and this one (step, section_size or nodes)', have.space),
                HINT = 'Drop the space here (keyed_drop) and import again: it is then created as on the old cluster.';
        END IF;
        n := @extschema@.pg_idgen_keyed_raise_bounds(have.space,
                 ARRAY(SELECT b::pg_catalog.int8 FROM pg_catalog.jsonb_array_elements_text(e OPERATOR(pg_catalog.->) 'bounds') b));
        FOR x IN SELECT * FROM pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof(e OPERATOR(pg_catalog.->) 'usage') OPERATOR(pg_catalog.=) 'array'
                                                                      THEN e OPERATOR(pg_catalog.->) 'usage' ELSE '[]' END) LOOP
            IF (x OPERATOR(pg_catalog.->>) 'grantee') OPERATOR(pg_catalog.=) 'public'
               OR EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) (x OPERATOR(pg_catalog.->>) 'grantee')) THEN
                PERFORM @extschema@.keyed_grant(have.space, x OPERATOR(pg_catalog.->>) 'grantee', (x OPERATOR(pg_catalog.->>) 'grant_option')::pg_catalog.bool);
            ELSE
                RAISE WARNING 'keyed space "%": role "%" has USAGE on the old cluster and does not exist here', have.space, x OPERATOR(pg_catalog.->>) 'grantee';
            END IF;
        END LOOP;
        object := 'keyed space'; name := have.space;
        action := pg_catalog.format('%s, %s of 1024 bucket bounds raised', CASE WHEN created THEN 'created' ELSE 'present' END, n);
        RETURN NEXT;
    END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_state_import(jsonb) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_state_import(jsonb) IS 'moving to a new cluster: applies pg_idgen_state_export()''s state of the old cluster''s database here, only creating and raising (superuser); run again after the old cluster''s writes stopped';
REVOKE ALL ON FUNCTION pg_idgen_snowflake_marks() FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_snowflake_raise_floor(bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_keyed_raise_bounds(text, bigint[]) FROM PUBLIC;

-- Citus: pg_idgen_citus_check(), the check of every node's worker id, segment tags and keyed
-- spaces run on the coordinator (sql/citus.sql).
-- pg_idgen on Citus: the check run on the coordinator (docs/fleet.md, "Citus"). On every node of
-- the Citus cluster (run_command_on_all_nodes, Citus 11.1+: the coordinator and the active primary
-- workers, each in this database as the caller) it reads the worker id that node generates with
-- (snowflake_worker()), its segment tags and its keyed spaces, and returns one row per node and
-- worker id, per node and tag, per node and space, with a problem where values can repeat or a
-- node cannot evaluate: a worker id on two nodes or none; a strided tag or a fleet-mode space with
-- nodes => fewer than the nodes that can evaluate, a node_index on two nodes, strides that differ;
-- stride slots served by two nodes; a plain keyed space where several nodes evaluate; a tag or a
-- space missing on a node. With fail => true (the default) any problem is an ERROR (55000) naming
-- them all, so a script stops on it; fail => false only returns the rows.
-- Resolved when it runs (plpgsql), so the extension installs where Citus is not.
CREATE FUNCTION @extschema@.pg_idgen_citus_check(fail pg_catalog.bool DEFAULT true,
    OUT node pg_catalog.text, OUT nodeid pg_catalog.int4, OUT kind pg_catalog.text, OUT name pg_catalog.text,
    OUT value pg_catalog.int4, OUT nodes pg_catalog.int4, OUT problem pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    evaluating pg_catalog.int4;
    res pg_catalog.json;
    r record;
    problems pg_catalog.text[] := '{}';
    cmd CONSTANT pg_catalog.text := $cmd$
SELECT pg_catalog.json_build_object(
    'worker_id', w.worker_id,
    'tags', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
                 'tag', s.tag, 'nodes', s.nodes, 'node_index', s.node_index, 'step', s.step,
                 'unit', s.unit, 'start', s.start, 'slotted', s.slotted, 'registry', s.registry,
                 'slots', (SELECT pg_catalog.json_agg(l.slot ORDER BY l.slot)
                             FROM @extschema@.pg_idgen_segment_slots l
                            WHERE l.tag OPERATOR(pg_catalog.=) s.tag AND l.owned)))
               FROM @extschema@.pg_idgen_segments s),
    'spaces', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
                   'space', k.space, 'nodes', k.nodes, 'node_index', k.node_index))
                 FROM @extschema@.pg_idgen_keyed_spaces k))::pg_catalog.text
  FROM @extschema@.snowflake_worker() w
$cmd$;
BEGIN
    IF fail IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed', MESSAGE = 'argument "fail" must not be NULL';
    END IF;
    IF pg_catalog.to_regprocedure('pg_catalog.run_command_on_all_nodes(pg_catalog.text, pg_catalog.bool, pg_catalog.bool)') IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = 'pg_idgen_citus_check() needs the citus extension (11.1 or later) in this database',
            HINT = 'Run it on the coordinator, in the database of the Citus cluster.';
    END IF;
    -- every active primary node evaluates DEFAULTs: clients connected to it, and INSERT ... SELECT
    -- pushed down to the nodes holding the source's shards
    SELECT pg_catalog.count(*)::pg_catalog.int4 INTO evaluating
      FROM pg_catalog.pg_dist_node d
     WHERE d.isactive AND d.noderole OPERATOR(pg_catalog.=) 'primary'::pg_catalog.noderole;
    SELECT pg_catalog.json_agg(pg_catalog.json_build_object('nodeid', c.nodeid, 'success', c.success, 'result', c.result))
      INTO res
      FROM pg_catalog.run_command_on_all_nodes(cmd) c;
    FOR r IN
        WITH res AS (
            SELECT (e OPERATOR(pg_catalog.->>) 'nodeid')::pg_catalog.int4 AS nodeid,
                   (e OPERATOR(pg_catalog.->>) 'success')::pg_catalog.bool AS ok,
                   e OPERATOR(pg_catalog.->>) 'result' AS result
              FROM pg_catalog.json_array_elements(COALESCE(res, '[]'::pg_catalog.json)) e),
        nd AS (
            SELECT x.nodeid, COALESCE(pg_catalog.format('%s:%s', d.nodename, d.nodeport), x.nodeid::pg_catalog.text) AS node,
                   x.ok, x.result, CASE WHEN x.ok THEN x.result::pg_catalog.json END AS j
              FROM res x LEFT JOIN pg_catalog.pg_dist_node d ON d.nodeid OPERATOR(pg_catalog.=) x.nodeid),
        wk AS (
            SELECT nd.node, nd.nodeid, (nd.j OPERATOR(pg_catalog.->>) 'worker_id')::pg_catalog.int4 AS w
              FROM nd WHERE nd.ok),
        tg AS (
            SELECT nd.node, nd.nodeid, t OPERATOR(pg_catalog.->>) 'tag' AS tag,
                   (t OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4 AS nodes,
                   (t OPERATOR(pg_catalog.->>) 'node_index')::pg_catalog.int4 AS idx,
                   pg_catalog.format('nodes %s, step %s, unit %s, start %s', t OPERATOR(pg_catalog.->>) 'nodes',
                                     t OPERATOR(pg_catalog.->>) 'step', t OPERATOR(pg_catalog.->>) 'unit',
                                     t OPERATOR(pg_catalog.->>) 'start') AS shape,
                   (t OPERATOR(pg_catalog.->>) 'slotted')::pg_catalog.bool AS slotted,
                   (t OPERATOR(pg_catalog.->>) 'registry')::pg_catalog.bool AS registry,
                   ARRAY(SELECT s::pg_catalog.int4
                           FROM pg_catalog.json_array_elements_text(CASE WHEN pg_catalog.json_typeof(t OPERATOR(pg_catalog.->) 'slots') OPERATOR(pg_catalog.=) 'array' THEN t OPERATOR(pg_catalog.->) 'slots' ELSE '[]'::pg_catalog.json END) s) AS slots
              FROM nd, pg_catalog.json_array_elements(CASE WHEN pg_catalog.json_typeof(nd.j OPERATOR(pg_catalog.->) 'tags') OPERATOR(pg_catalog.=) 'array' THEN nd.j OPERATOR(pg_catalog.->) 'tags' ELSE '[]'::pg_catalog.json END) t
             WHERE nd.ok),
        ks AS (
            SELECT nd.node, nd.nodeid, k OPERATOR(pg_catalog.->>) 'space' AS space,
                   (k OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4 AS nodes,
                   (k OPERATOR(pg_catalog.->>) 'node_index')::pg_catalog.int4 AS idx
              FROM nd, pg_catalog.json_array_elements(CASE WHEN pg_catalog.json_typeof(nd.j OPERATOR(pg_catalog.->) 'spaces') OPERATOR(pg_catalog.=) 'array' THEN nd.j OPERATOR(pg_catalog.->) 'spaces' ELSE '[]'::pg_catalog.json END) k
             WHERE nd.ok)
        SELECT nd.node, nd.nodeid, 'node' AS kind, NULL::pg_catalog.text AS name, NULL::pg_catalog.int4 AS value,
               NULL::pg_catalog.int4 AS nodes, pg_catalog.format('the check could not run on this node: %s', nd.result) AS problem
          FROM nd WHERE NOT nd.ok
        UNION ALL
        SELECT wk.node, wk.nodeid, 'worker_id', NULL, wk.w, NULL,
               CASE WHEN wk.w IS NULL THEN 'no worker id: snowflake_next() fails on this node'
                    ELSE (SELECT pg_catalog.format('worker id %s is also the worker id of %s', wk.w,
                                                   pg_catalog.string_agg(o.node, ', ' ORDER BY o.nodeid))
                            FROM wk o WHERE o.w OPERATOR(pg_catalog.=) wk.w AND o.nodeid OPERATOR(pg_catalog.<>) wk.nodeid
                          HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0) END
          FROM wk
        UNION ALL
        SELECT tg.node, tg.nodeid, 'segment', tg.tag, CASE WHEN NOT tg.slotted THEN tg.idx END, tg.nodes,
               CASE WHEN tg.registry THEN NULL
                    WHEN tg.slotted THEN
                        (SELECT pg_catalog.format('stride slots %s are also served by %s',
                                                  pg_catalog.string_agg(DISTINCT s::pg_catalog.text, ','),
                                                  pg_catalog.string_agg(DISTINCT o.node, ', '))
                           FROM tg o, pg_catalog.unnest(o.slots) s
                          WHERE o.tag OPERATOR(pg_catalog.=) tg.tag AND o.nodeid OPERATOR(pg_catalog.<>) tg.nodeid
                            AND s OPERATOR(pg_catalog.=) ANY (tg.slots)
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0)
                    WHEN tg.nodes OPERATOR(pg_catalog.<) evaluating THEN
                        pg_catalog.format('nodes => %s, but %s nodes can evaluate segment_next(%L): create the tag on every node with the same nodes => (at least %s) and a node_index of its own',
                                          tg.nodes, evaluating, tg.tag, evaluating)
                    ELSE COALESCE(
                        (SELECT pg_catalog.format('node_index %s is also the node_index of %s', tg.idx,
                                                  pg_catalog.string_agg(o.node, ', ' ORDER BY o.nodeid))
                           FROM tg o
                          WHERE o.tag OPERATOR(pg_catalog.=) tg.tag AND o.nodeid OPERATOR(pg_catalog.<>) tg.nodeid
                            AND o.idx OPERATOR(pg_catalog.=) tg.idx AND NOT o.slotted AND NOT o.registry
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0),
                        (SELECT pg_catalog.format('%s here, but %s', tg.shape,
                                                  pg_catalog.string_agg(pg_catalog.format('%s on %s', o.shape, o.node), ', ' ORDER BY o.nodeid))
                           FROM tg o
                          WHERE o.tag OPERATOR(pg_catalog.=) tg.tag AND o.nodeid OPERATOR(pg_catalog.<>) tg.nodeid
                            AND o.shape OPERATOR(pg_catalog.<>) tg.shape
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0)) END
          FROM tg
        UNION ALL
        SELECT nd.node, nd.nodeid, 'segment', t.tag, NULL, NULL,
               pg_catalog.format('segment tag %L is missing on this node: segment_next(%L) evaluated here fails', t.tag, t.tag)
          FROM nd, (SELECT DISTINCT tg.tag FROM tg) t
         WHERE nd.ok AND NOT EXISTS (SELECT FROM tg WHERE tg.tag OPERATOR(pg_catalog.=) t.tag AND tg.nodeid OPERATOR(pg_catalog.=) nd.nodeid)
        UNION ALL
        SELECT ks.node, ks.nodeid, 'keyed', ks.space, ks.idx, ks.nodes,
               CASE WHEN ks.nodes IS NULL AND evaluating OPERATOR(pg_catalog.>) 1 THEN
                        pg_catalog.format('plain keyed space %L: every node that evaluates keyed_next(%L, key) hands out the same values; create it on every node with nodes => %s (or more) and a node_index of its own',
                                          ks.space, ks.space, evaluating)
                    WHEN ks.nodes OPERATOR(pg_catalog.<) evaluating THEN
                        pg_catalog.format('nodes => %s, but %s nodes can evaluate keyed_next(%L, key): create the space on every node with the same nodes => (at least %s) and a node_index of its own',
                                          ks.nodes, evaluating, ks.space, evaluating)
                    ELSE COALESCE(
                        (SELECT pg_catalog.format('node_index %s is also the node_index of %s', ks.idx,
                                                  pg_catalog.string_agg(o.node, ', ' ORDER BY o.nodeid))
                           FROM ks o
                          WHERE o.space OPERATOR(pg_catalog.=) ks.space AND o.nodeid OPERATOR(pg_catalog.<>) ks.nodeid
                            AND o.idx OPERATOR(pg_catalog.=) ks.idx
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0),
                        (SELECT pg_catalog.format('nodes => %s here, but %s', ks.nodes,
                                                  pg_catalog.string_agg(pg_catalog.format('%s on %s', o.nodes, o.node), ', ' ORDER BY o.nodeid))
                           FROM ks o
                          WHERE o.space OPERATOR(pg_catalog.=) ks.space AND o.nodeid OPERATOR(pg_catalog.<>) ks.nodeid
                            AND o.nodes OPERATOR(pg_catalog.<>) ks.nodes
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0)) END
          FROM ks
        UNION ALL
        SELECT nd.node, nd.nodeid, 'keyed', k.space, NULL, NULL,
               pg_catalog.format('keyed space %L is missing on this node: keyed_next(%L, key) evaluated here fails', k.space, k.space)
          FROM nd, (SELECT DISTINCT ks.space FROM ks) k
         WHERE nd.ok AND NOT EXISTS (SELECT FROM ks WHERE ks.space OPERATOR(pg_catalog.=) k.space AND ks.nodeid OPERATOR(pg_catalog.=) nd.nodeid)
        ORDER BY 3, 4 NULLS FIRST, 2
    LOOP
        node := r.node; nodeid := r.nodeid; kind := r.kind; name := r.name;
        value := r.value; nodes := r.nodes; problem := r.problem;
        RETURN NEXT;
        IF r.problem IS NOT NULL THEN
            problems := pg_catalog.array_append(problems,
                pg_catalog.format('%s%s on %s: %s', r.kind, CASE WHEN r.name IS NOT NULL THEN pg_catalog.format(' %L', r.name) ELSE '' END, r.node, r.problem));
        END IF;
    END LOOP;
    IF fail AND pg_catalog.cardinality(problems) OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('pg_idgen on this Citus cluster can hand out a value twice or fail on a node: %s problem(s)',
                                        pg_catalog.cardinality(problems)),
            DETAIL = pg_catalog.array_to_string(problems, E'\n'),
            HINT = 'SELECT * FROM pg_idgen_citus_check(fail => false) lists every node''s worker id, tags and spaces; docs/fleet.md, "Citus", says how to set each up.';
    END IF;
END
$fn$;
COMMENT ON FUNCTION @extschema@.pg_idgen_citus_check(pg_catalog.bool) IS 'pg_idgen on Citus (run on the coordinator): every node''s worker id, segment tags and keyed spaces; a problem where a value can repeat across nodes or a node cannot evaluate; ERROR on any unless fail => false';
REVOKE ALL ON FUNCTION @extschema@.pg_idgen_citus_check(pg_catalog.bool) FROM PUBLIC;

-- ---- A node's registry role holds no lock another node's claim or renewal waits for ----
-- pg_idgen_lease_claim chooses a free id without LOCK TABLE pg_idgen_leases (which a node's open
-- transaction kept, stalling every other node's renewal), reads the leased rows of the range
-- instead of every id of it, and waits for a row lock at most its own lock_timeout.
-- Internal: the parts of lo..hi the session's login role may act for (all of it for a superuser),
-- one row per mapping row of pg_idgen_registry_nodes that overlaps it; they may overlap.
CREATE FUNCTION pg_idgen_registry_ranges(lo int, hi int) RETURNS TABLE (first_worker int, last_worker int)
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
SELECT GREATEST(n.first_worker, $1), LEAST(n.last_worker, $2)
  FROM @extschema@.pg_idgen_registry_nodes n
  JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) n.role_name
 WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')
   AND n.first_worker OPERATOR(pg_catalog.<=) $2 AND n.last_worker OPERATOR(pg_catalog.>=) $1
UNION ALL
SELECT $1, $2 WHERE $1 OPERATOR(pg_catalog.<=) $2
   AND EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) session_user AND r.rolsuper)
$fn$;

-- Internal: the free ids of lo..hi the caller may act for that start a gap: the first id of each
-- of its ranges, and the id after each leased one, when no live or unretired lease (retire_s
-- after its end) holds it. Reads the rows of lo..hi only (the smallest free id is one of them).
CREATE FUNCTION pg_idgen_lease_candidates(lo int, hi int, retire_s float8) RETURNS TABLE (c int8)
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
WITH allowed AS (SELECT a.first_worker AS a, a.last_worker AS b FROM @extschema@.pg_idgen_registry_ranges($1, $2) a),
     busy AS (SELECT l.worker_id FROM @extschema@.pg_idgen_leases l
               WHERE l.worker_id OPERATOR(pg_catalog.>=) $1 AND l.worker_id OPERATOR(pg_catalog.<=) $2
                 AND COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $3)
                     OPERATOR(pg_catalog.>=) pg_catalog.now())
SELECT DISTINCT x.c FROM (SELECT allowed.a::pg_catalog.int8 AS c FROM allowed
                          UNION ALL
                          SELECT busy.worker_id::pg_catalog.int8 OPERATOR(pg_catalog.+) 1 FROM busy) x
 WHERE EXISTS (SELECT FROM allowed WHERE x.c OPERATOR(pg_catalog.>=) allowed.a AND x.c OPERATOR(pg_catalog.<=) allowed.b)
   AND NOT EXISTS (SELECT FROM busy WHERE busy.worker_id::pg_catalog.int8 OPERATOR(pg_catalog.=) x.c)
$fn$;

-- Internal, for pg_idgen_lease_claim: one claim of worker id w by the rules written there (the
-- caller checked the role's right to it); whether it was granted.
CREATE FUNCTION pg_idgen_lease_try(
    w int, system_identifier text, node_name text, host text, port int, token bigint, ttl_s float8,
    fixed bool, retire_s float8, limit_ms bigint, take_worker_id int, take_fp bigint, take_renewed_us bigint)
    RETURNS bool
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
    INSERT INTO @extschema@.pg_idgen_leases AS l
        (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until, released_at, hwm_ms)
    VALUES ($1, $2::pg_catalog.numeric, $3, $4, $5, $6, pg_catalog.now(), pg_catalog.now(),
            pg_catalog.now() OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $7), NULL, $10)
    ON CONFLICT (worker_id) DO UPDATE SET
        system_identifier = excluded.system_identifier, node_name = excluded.node_name,
        host = excluded.host, port = excluded.port, token = excluded.token,
        since = CASE WHEN l.token OPERATOR(pg_catalog.=) excluded.token AND l.released_at IS NULL THEN l.since ELSE excluded.since END,
        renewed_at = excluded.renewed_at, lease_until = excluded.lease_until, released_at = NULL,
        hwm_ms = GREATEST(l.hwm_ms, excluded.hwm_ms),
        floor_ms = CASE WHEN l.token OPERATOR(pg_catalog.=) excluded.token THEN l.floor_ms ELSE l.hwm_ms END
    WHERE l.token OPERATOR(pg_catalog.=) excluded.token
       OR ((l.released_at IS NOT NULL
            OR (l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() AND $1 OPERATOR(pg_catalog.=) $11
                AND @extschema@.pg_idgen_registry_token_fp(l.token) OPERATOR(pg_catalog.=) $12
                AND (pg_catalog.date_part('epoch', l.renewed_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 OPERATOR(pg_catalog.=) $13))
           AND ($8
                OR (l.system_identifier OPERATOR(pg_catalog.=) excluded.system_identifier AND l.node_name OPERATOR(pg_catalog.=) excluded.node_name)
                OR COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $9) OPERATOR(pg_catalog.<) pg_catalog.now()));
    RETURN FOUND;
END
$fn$;

-- Claims or renews a worker id lease (worker_id), or, with worker_id NULL, chooses one of
-- lo..hi and claims it (auto mode). The id is taken when it is the caller's (same token: a
-- renewal), or when the holder's lease ended (released, or, with take_worker_id = the id, expired
-- with the fingerprint and renewed_at the caller saw unchanged for a ttl) and either fixed is
-- true, or the holder was the same node (system identifier and node name), or the id has been
-- retired for retire_s. hwm_ms only grows; a taker records the row's hwm_ms as floor_ms. One row:
-- granted (since_ms, floor_ms, and has_slots: whether a registry slot names the id), or not (the
-- holder, for messages, and its token's fingerprint, renewed_at and ttl); no row when no id of
-- lo..hi is free.
-- No call waits for another's transaction beyond what the registry sets here, whatever the
-- caller's settings: no table lock (a node's open transaction after a claim holds only the row
-- locks of the id it claimed, one its role may act for, so renewals and claims of other ids never
-- wait for it); a wait for a row lock ends after lock_timeout (1 s, 55P03). The choice reads the
-- rows of lo..hi, never every id of the range (a range of millions costs what its leased rows
-- cost): the caller's own id if the registry has one there (sticky), else the free ids that start
-- a gap between leased ones, at most 16, each claimed in turn with a lock_timeout of 100 ms; one
-- another node claims meanwhile (its claim in flight, or committed first) is passed over.
CREATE OR REPLACE FUNCTION pg_idgen_lease_claim(
    worker_id int, lo int, hi int, system_identifier text, node_name text, host text, port int,
    token bigint, ttl_s float8, fixed bool, retire_s float8, limit_ms bigint,
    take_worker_id int, take_fp bigint, take_renewed_us bigint)
    RETURNS TABLE (lease_worker_id int, granted bool, since_ms bigint, floor_ms bigint, has_slots bool,
                   holder text, holder_fp bigint, holder_renewed_us bigint, holder_ttl_ms bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS $fn$
#variable_conflict use_column
DECLARE
    w int := $1;
    r record;
    c int8;
    sticky bool := false;
    got bool;
    in_flight bool := false;
BEGIN
    IF $4 IS NULL OR $5 IS NULL OR $6 IS NULL OR $7 IS NULL OR $8 IS NULL OR $9 IS NULL
       OR $10 IS NULL OR $11 IS NULL OR $12 IS NULL OR (w IS NULL AND ($2 IS NULL OR $3 IS NULL)) THEN
        RAISE EXCEPTION 'pg_idgen_lease_claim: only worker_id (with lo and hi), lo, hi and the take_ arguments may be NULL'
            USING ERRCODE = '22004';
    END IF;
    IF w IS NOT NULL THEN
        PERFORM @extschema@.pg_idgen_registry_check(w);
        got := @extschema@.pg_idgen_lease_try(w, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);
    ELSE
        IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_registry_ranges($2, $3)) THEN
            RAISE EXCEPTION 'role "%" may not act for any worker id of %-% in this registry', session_user, $2, $3
                USING ERRCODE = '42501',
                      HINT = 'A superuser of the registry maps a node''s role to its worker ids: INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES (...).';
        END IF;
        w := (SELECT l.worker_id FROM @extschema@.pg_idgen_leases l
               WHERE l.system_identifier OPERATOR(pg_catalog.=) $4::pg_catalog.numeric
                 AND l.node_name OPERATOR(pg_catalog.=) $5
                 AND l.worker_id OPERATOR(pg_catalog.>=) $2 AND l.worker_id OPERATOR(pg_catalog.<=) $3
                 AND @extschema@.pg_idgen_registry_may(l.worker_id)
               ORDER BY (l.token OPERATOR(pg_catalog.=) $8) DESC, l.since DESC LIMIT 1);
        sticky := w IS NOT NULL;
        got := false;
        PERFORM pg_catalog.set_config('lock_timeout', '100ms', true);
        FOR c IN
            SELECT w WHERE sticky
            UNION ALL
            (SELECT x.c FROM @extschema@.pg_idgen_lease_candidates($2, $3, $11) x WHERE NOT sticky ORDER BY x.c LIMIT 16)
        LOOP
            BEGIN
                got := @extschema@.pg_idgen_lease_try(c::pg_catalog.int4, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);
            EXCEPTION WHEN lock_not_available THEN
                got := false;
                in_flight := true;
            END;
            w := c::pg_catalog.int4;
            EXIT WHEN got OR sticky;
        END LOOP;
        IF NOT got AND NOT sticky THEN
            RETURN;   -- no id of lo..hi free (or each free one claimed by another node meanwhile)
        END IF;
    END IF;
    lease_worker_id := w;
    IF got THEN
        granted := true;
        SELECT (pg_catalog.date_part('epoch', l.since) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 AS s, l.floor_ms AS f
          INTO r FROM @extschema@.pg_idgen_leases l WHERE l.worker_id OPERATOR(pg_catalog.=) w;
        since_ms := r.s;
        floor_ms := r.f;
        has_slots := EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o
                              WHERE o.owner OPERATOR(pg_catalog.=) w OR o.move_to OPERATOR(pg_catalog.=) w);
        RETURN NEXT;
        RETURN;
    END IF;
    granted := false;
    SELECT pg_catalog.format('node "%s" (host %s, port %s, system identifier %s) since %s, lease until %s%s',
               l.node_name, l.host, l.port, l.system_identifier, l.since, l.lease_until,
               CASE WHEN l.released_at IS NOT NULL THEN ', released at ' OPERATOR(pg_catalog.||) l.released_at::pg_catalog.text
                    WHEN l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() THEN ', expired' ELSE '' END) AS t,
           CASE WHEN l.released_at IS NULL THEN @extschema@.pg_idgen_registry_token_fp(l.token) END AS fp,
           (pg_catalog.date_part('epoch', l.renewed_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 AS ru,
           pg_catalog.ceil(pg_catalog.date_part('epoch', l.lease_until OPERATOR(pg_catalog.-) l.renewed_at) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 AS ttl
      INTO r FROM @extschema@.pg_idgen_leases l WHERE l.worker_id OPERATOR(pg_catalog.=) w;
    IF FOUND AND NOT in_flight THEN
        holder := r.t;
        holder_fp := r.fp;
        holder_renewed_us := r.ru;
        holder_ttl_ms := GREATEST(r.ttl, 0);
    ELSE
        holder := CASE WHEN in_flight THEN 'another node''s claim in flight' ELSE 'another node' END;
        holder_ttl_ms := 0;
    END IF;
    RETURN NEXT;
END
$fn$;

REVOKE ALL ON FUNCTION pg_idgen_registry_ranges(int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_candidates(int, int, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_try(int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_registry_ranges(int, int) IS 'internal: the parts of a range of worker ids the session''s login role may act for';
COMMENT ON FUNCTION pg_idgen_lease_candidates(int, int, float8) IS 'internal: the free worker ids of a range that start a gap between leased ones, for the choice of pg_idgen_lease_claim';
COMMENT ON FUNCTION pg_idgen_lease_try(int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) IS 'internal: one claim of a worker id by the rules of pg_idgen_lease_claim';
COMMENT ON FUNCTION pg_idgen_lease_claim(int, int, int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) IS 'registry, for the lease workers: claims or renews a worker id lease (or chooses one of lo..hi), for the worker ids the caller''s role may lease';

-- ---- The registry marks of dropped databases are given back by their node ----
-- Forgets the marks (keyed and segment) of the databases `gone` of the caller's node (system
-- identifier): the node sends the databases it no longer has (it checks its own catalog, the
-- only place that knows), so that a database dropped for good gives its (database, name) pairs
-- back without a superuser (a role with CREATEDB that clones and drops databases cannot use up
-- the node's 1024 pairs). Returns every database that still has marks of the system identifier
-- (each kind names at most 1024 pairs, so at most 2048 rows); with an empty array, a read. The
-- caller's login role must own the system identifier's marks (42501 otherwise; no row when
-- nobody owns them yet); it deletes only rows of that system identifier, so no other node's call
-- waits for it.
CREATE FUNCTION pg_idgen_marks_forget(system_identifier text, gone oid[])
    RETURNS TABLE (database oid)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    sysid numeric(20, 0);
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_marks_forget: no argument may be NULL' USING ERRCODE = '22004';
    END IF;
    IF $1 OPERATOR(pg_catalog.!~) '^[0-9]{1,20}$'
       OR $1::pg_catalog.numeric OPERATOR(pg_catalog.=) 0
       OR $1::pg_catalog.numeric OPERATOR(pg_catalog.>) 18446744073709551615 THEN
        RAISE EXCEPTION 'pg_idgen_marks_forget: % is not a system identifier (an integer from 1 to 18446744073709551615)',
                        pg_catalog.quote_literal($1) USING ERRCODE = '22023';
    END IF;
    sysid := $1::pg_catalog.numeric;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_keyed_mark_owners o
                    WHERE o.system_identifier OPERATOR(pg_catalog.=) sysid) THEN
        RETURN;
    END IF;
    PERFORM @extschema@.pg_idgen_marks_owner_check(sysid, 'marks');
    DELETE FROM @extschema@.pg_idgen_keyed_marks m
     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid AND m.database OPERATOR(pg_catalog.=) ANY ($2);
    DELETE FROM @extschema@.pg_idgen_segment_marks m
     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid AND m.database OPERATOR(pg_catalog.=) ANY ($2);
    RETURN QUERY
    SELECT k.database FROM @extschema@.pg_idgen_keyed_marks k WHERE k.system_identifier OPERATOR(pg_catalog.=) sysid
    UNION
    SELECT g.database FROM @extschema@.pg_idgen_segment_marks g WHERE g.system_identifier OPERATOR(pg_catalog.=) sysid;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_marks_forget(text, oid[]) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_marks_forget(text, oid[]) IS 'registry, for the lease workers: forgets the marks of databases the caller''s node no longer has, and lists the databases that have marks of it';
-- The roles that may write marks (EXECUTE on pg_idgen_keyed_marks or pg_idgen_segment_marks,
-- as docs/worker-ids.md "Registry roles" grants it) may forget those of their dropped databases.
DO $do$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT DISTINCT a.grantee::pg_catalog.regrole AS role
               FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
              WHERE p.oid OPERATOR(pg_catalog.=) ANY (ARRAY[
                        'pg_idgen_keyed_marks(text, oid, text, int[], bigint[])'::pg_catalog.regprocedure,
                        'pg_idgen_segment_marks(text, oid, text, int[], bigint[])'::pg_catalog.regprocedure]::pg_catalog.oid[])
                AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                AND a.grantee OPERATOR(pg_catalog.<>) 0
                AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION pg_idgen_marks_forget(text, oid[]) TO %s', g.role);
    END LOOP;
END
$do$;

-- ---- A node's first write of marks waits for no other node ----
-- pg_idgen_marks_owner_check serialised first writes on the pg_idgen_registry_nodes rows of every
-- role the login role is a member of: with one row for a group role the nodes share, a node's
-- open transaction stalled the others' first writes. It now locks only the login role's own rows.
-- Internal, for the SECURITY DEFINER marks functions below: refuses (42501) unless the session's
-- login role owns the marks of system identifier $1 (pg_idgen_keyed_mark_owners; the first
-- registry node role to write marks of it, keyed or segment, takes them) or is a superuser. $2
-- names the marks in the message.
CREATE OR REPLACE FUNCTION pg_idgen_marks_owner_check(sysid numeric, what text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    owner name;
    worker_ids numeric;
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_marks_owner_check: no argument may be NULL' USING ERRCODE = '22004';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_roles r
                WHERE r.rolname OPERATOR(pg_catalog.=) session_user AND r.rolsuper) THEN
        RETURN true;
    END IF;
    SELECT o.role_name INTO owner FROM @extschema@.pg_idgen_keyed_mark_owners o
     WHERE o.system_identifier OPERATOR(pg_catalog.=) $1;
    IF NOT FOUND THEN
        SELECT pg_catalog.sum((n.last_worker::pg_catalog.int8 OPERATOR(pg_catalog.-) n.first_worker)
                              OPERATOR(pg_catalog.+) 1) INTO worker_ids
          FROM @extschema@.pg_idgen_registry_nodes n
          JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) n.role_name
         WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER');
        IF worker_ids IS NULL THEN
            RAISE EXCEPTION 'role "%" is not a node role of this registry', session_user
                USING ERRCODE = '42501',
                      HINT = 'A superuser of the registry maps a node''s role to its worker ids: INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES (...).';
        END IF;
        -- One first write at a time per login role: the rows of pg_idgen_registry_nodes that
        -- name the session's login role itself, locked by a no-op UPDATE, and the rows of
        -- pg_idgen_keyed_mark_owners it owns, locked FOR UPDATE: only this login role's calls
        -- lock them (no other role writes the tables, and no function locks another login
        -- role's rows), so no other node can stall it, nor wait for it. A row of a group role
        -- that several nodes share is not locked: one node's open transaction would stall the
        -- others' first writes. Without the locks, concurrent sessions of the role, each in an
        -- open transaction, would each count the others' new identifiers out and together take
        -- the bound several times over; a stale snapshot (REPEATABLE READ) gets 40001 instead of
        -- counting short. (A login role mapped only through a group, with no identifier yet,
        -- has no row to lock: its concurrent sessions can each take one identifier, once.)
        UPDATE @extschema@.pg_idgen_registry_nodes AS n SET role_name = n.role_name
         WHERE n.role_name OPERATOR(pg_catalog.=) session_user;
        PERFORM FROM @extschema@.pg_idgen_keyed_mark_owners o
          WHERE o.role_name OPERATOR(pg_catalog.=) session_user FOR UPDATE;
        IF (SELECT pg_catalog.count(*) FROM @extschema@.pg_idgen_keyed_mark_owners o
             WHERE o.role_name OPERATOR(pg_catalog.=) session_user)::pg_catalog.numeric
           OPERATOR(pg_catalog.>=) (worker_ids OPERATOR(pg_catalog.*) 2) THEN
            RAISE EXCEPTION 'role "%" may not take the % of another system identifier', session_user, $2
                USING ERRCODE = '53400',
                      DETAIL = pg_catalog.format('It owns the marks of %s system identifiers, twice its %s worker ids.',
                                                 worker_ids OPERATOR(pg_catalog.*) 2, worker_ids),
                      HINT = 'A superuser of the registry deletes the rows of a retired node: DELETE FROM pg_idgen_keyed_marks WHERE system_identifier = ...; DELETE FROM pg_idgen_segment_marks WHERE system_identifier = ...; DELETE FROM pg_idgen_keyed_mark_owners WHERE system_identifier = ...;';
        END IF;
        INSERT INTO @extschema@.pg_idgen_keyed_mark_owners AS o (system_identifier, role_name)
        VALUES ($1, session_user) ON CONFLICT (system_identifier) DO NOTHING;
        SELECT o.role_name INTO owner FROM @extschema@.pg_idgen_keyed_mark_owners o
         WHERE o.system_identifier OPERATOR(pg_catalog.=) $1;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) owner
                      AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')) THEN
        RAISE EXCEPTION 'role "%" may not write the % of system identifier %', session_user, $2, $1
            USING ERRCODE = '42501',
                  DETAIL = pg_catalog.format('They belong to role "%s", the first to write them.', owner),
                  HINT = 'A node writes the marks of its own system identifier only; a superuser of the registry hands them to another role by deleting their row of pg_idgen_keyed_mark_owners.';
    END IF;
    RETURN false;
END
$fn$;

-- snowflake_next() and snowflake_next_text(): plain C functions (the hot path) instead of pgrx
-- wrappers; the library keeps the old symbols (src/compat.rs) for databases not yet updated.
CREATE OR REPLACE FUNCTION @extschema@.snowflake_next() RETURNS pg_catalog.int8
    STRICT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_snowflake_next';
CREATE OR REPLACE FUNCTION @extschema@.snowflake_next_text() RETURNS pg_catalog.text
    STRICT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_snowflake_next_text';
