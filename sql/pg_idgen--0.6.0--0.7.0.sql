-- pg_idgen 0.6.0 -> 0.7.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.7.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.6.0
-- (tests/upgrade/extension_update_060.sh) checks that a database updated by it has exactly the
-- objects of a fresh 0.7.0 install (tests/upgrade/objects.sql) and that nothing of the extension
-- binds a function, operator or type outside pg_catalog and the extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.7.0'" to load this file. \quit

-- Each change of 0.7.0 adds its section below, in the form the install script creates it.

-- ---- A refused lease claim locks nothing ----
-- pg_idgen_lease_try decides by the rules on the row as the statement's snapshot sees it before it
-- locks anything, and a claim the rules refuse under the row lock is rolled back to a
-- subtransaction's start, which ends the lock: an open transaction after a refused claim (a member
-- role of a shared range, claiming another node's id) no longer stalls the holder's renewals.
-- Internal, for pg_idgen_lease_claim: one claim of worker id w by the rules written there (the
-- caller checked the role's right to it); whether it was granted. A refused claim holds no lock:
-- the rules are decided first on the row as the statement's snapshot sees it (a read that locks
-- nothing); only a claim they grant takes the row's lock, in the upsert, whose WHERE decides by
-- the same rules again on the row's newest version under that lock (a holder's renewal or
-- another node's claim may have committed since the read). When that refuses, the upsert's
-- subtransaction is rolled back, which ends its row lock: a node's open transaction after a
-- refused claim never delays the holder's renewal.
CREATE OR REPLACE FUNCTION pg_idgen_lease_try(
    w int, system_identifier text, node_name text, host text, port int, token bigint, ttl_s float8,
    fixed bool, retire_s float8, limit_ms bigint, take_worker_id int, take_fp bigint, take_renewed_us bigint)
    RETURNS bool
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    grants bool;
    refused bool := false;
BEGIN
    SELECT l.token OPERATOR(pg_catalog.=) $6
        OR ((l.released_at IS NOT NULL
             OR (l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() AND $1 OPERATOR(pg_catalog.=) $11
                 AND @extschema@.pg_idgen_registry_token_fp(l.token) OPERATOR(pg_catalog.=) $12
                 AND (pg_catalog.date_part('epoch', l.renewed_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 OPERATOR(pg_catalog.=) $13))
            AND ($8
                 OR (l.system_identifier OPERATOR(pg_catalog.=) $2::pg_catalog.numeric AND l.node_name OPERATOR(pg_catalog.=) $3)
                 OR COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $9) OPERATOR(pg_catalog.<) pg_catalog.now()))
      INTO grants
      FROM @extschema@.pg_idgen_leases l WHERE l.worker_id OPERATOR(pg_catalog.=) $1;
    IF FOUND AND grants IS NOT TRUE THEN
        RETURN false;
    END IF;
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
        IF NOT FOUND THEN
            refused := true;
            RAISE EXCEPTION 'pg_idgen_lease_try: refused under the row lock' USING ERRCODE = 'P0001';
        END IF;
    EXCEPTION WHEN raise_exception THEN
        IF NOT refused THEN
            RAISE;
        END IF;
        RETURN false;   -- the subtransaction, and with it the row lock, is gone
    END;
    RETURN true;
END
$fn$;

-- ---- pg_idgen_state_import takes the worker-id slots of a state all or none ----
-- A state naming more worker ids than the free worker-id slots failed (53400) after taking the
-- remaining slots, which stayed taken until a restart: pg_idgen_snowflake_claim_slots claims
-- every slot first, all or none.
CREATE FUNCTION "pg_idgen_snowflake_claim_slots"(
	"worker_ids" bigint[] /* core::option::Option<alloc::vec::Vec<core::option::Option<i64>>> */
) RETURNS INT /* i32 */
VOLATILE PARALLEL UNSAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'pg_idgen_snowflake_claim_slots_wrapper';
REVOKE ALL ON FUNCTION pg_idgen_snowflake_claim_slots(bigint[]) FROM PUBLIC;
CREATE OR REPLACE FUNCTION pg_idgen_state_import(state jsonb)
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

-- pg_idgen_metrics re-created as a fresh install writes it (unchanged since 0.5.0): a database that
-- pg_upgrade brought from an older major holds the view as that major's pg_dump printed it (on 19 the
-- later branches of its UNION ALL carry `AS text` aliases), and an updated database should have
-- exactly the objects of a fresh 0.7.0. CREATE OR REPLACE keeps its grants and comment.
CREATE OR REPLACE VIEW @extschema@.pg_idgen_metrics AS
SELECT m.metric, m.labels, m.value, m.type, m.help
FROM (
    SELECT 'pg_idgen_ids_issued_total'::text AS metric,
           pg_catalog.jsonb_build_object('worker_id', s.worker_id::text) AS labels,
           s.ids_issued::float8 AS value, 'counter'::text AS type,
           'Snowflake ids issued since the server started, per worker id'::text AS help
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_logical_clock_lead_seconds', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.lead_ms::float8 OPERATOR(pg_catalog./) 1000::float8, 'gauge',
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
    SELECT 'pg_idgen_lease_valid_seconds', '{}'::jsonb, k.valid_for_ms::float8 OPERATOR(pg_catalog./) 1000::float8, 'gauge',
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
