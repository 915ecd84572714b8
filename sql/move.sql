-- pg_idgen: moving to a new cluster (logical replication, blue/green). The application's tables
-- replicate; pg_idgen's own state does not (sql/replication.sql). pg_idgen_state_export() on the
-- old cluster gives, for its database, everything the new cluster needs to continue above every
-- value the old one handed out; pg_idgen_state_import(state) on the new cluster applies it:
--   * segment tags: created with the same configuration where missing (plain, strided, slotted,
--     registry-owned), each moved above the old cluster's durable high-water mark (plain and
--     strided: segment_set; slotted: each slot the old cluster owned adopted above its mark;
--     registry-owned: the registry's ceilings carry them, nothing to move);
--   * keyed spaces: created where missing, each bucket's durable bound raised to the old one's
--     (a key continues from its bucket's bound: as after a restart of the old cluster), USAGE
--     grants carried to the roles that exist;
--   * snowflake: every worker id the old instance generated for since its start continues at or
--     above its durable reservation, the old instance's floor for all others; the database's
--     worker id (pg_idgen_worker) set to the old one's where the new database has none;
--   * the server layout and custom layouts compared (a difference refuses: 55000), layouts and
--     mask keys copied where missing, compared where present (a different key refuses).
-- Both only read or raise: run the import as often as wanted while the old cluster still takes
-- writes, and once more after its writes stopped, before the writers move; nothing is then ever
-- handed out twice. Superusers only (the export carries mask keys). scripts/move-state.sh pipes
-- one into the other; docs/operations.md, "Moving to a new cluster".
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
    -- reservation here; the old floor covers the worker ids it had no slot for. Each worker id
    -- gets its worker-id slot first, all or none: a state naming more worker ids than the slots
    -- free here fails (53400) before any is taken (a slot is freed only by a restart).
    PERFORM @extschema@.pg_idgen_snowflake_claim_slots(ARRAY(
        SELECT (sw OPERATOR(pg_catalog.->>) 'worker_id')::pg_catalog.int8
          FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'snowflake') sw
         WHERE (sw OPERATOR(pg_catalog.->>) 'worker_id') IS NOT NULL));
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
REVOKE ALL ON FUNCTION pg_idgen_snowflake_claim_slots(bigint[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_keyed_raise_bounds(text, bigint[]) FROM PUBLIC;
