-- pg_idgen 0.4.0 -> 0.5.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.5.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.4.0 checks that a database
-- updated by it has exactly the objects of a fresh 0.5.0 install (tests/upgrade/objects.sql) and
-- that nothing of the extension binds a function, operator or type outside pg_catalog and the
-- extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.5.0'" to load this file. \quit

-- Each change of 0.5.0 adds its section below, in the form the install script creates it.

-- ---- pg_idgen_metrics: every operator schema-qualified. 0.4.0's view divided with a bare `/` on
-- (float8, integer), an operator pg_catalog does not have, so CREATE EXTENSION and the update bound
-- whichever `/` the owner of the extension's schema had planted; a superuser or the exporter's
-- role reading the view then ran it. Recreated here with OPERATOR(pg_catalog./) on (float8, float8).
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

-- ---------------------------------------------------------------------------------------------
-- Keyed sequences: durable bounds per bucket of sections (section mod 1024) instead of one per
-- space. Each existing space gets its 1,024 rows at its 0.4.0 bound (the value its backing
-- sequence returned last; nothing handed out if never called), so every key continues above
-- every value handed out before the update.
CREATE TABLE pg_idgen_keyed_bounds (
    bound  bigint NOT NULL,
    space  text NOT NULL,
    bucket int NOT NULL CHECK (bucket BETWEEN 0 AND 1023),
    PRIMARY KEY (space, bucket)
);
COMMENT ON TABLE pg_idgen_keyed_bounds IS 'pg_idgen keyed sequence spaces: the durable bound of each bucket of sections (section mod 1024), raised in place a step at a time';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_keyed_bounds', '');
REVOKE ALL ON pg_idgen_keyed_bounds FROM PUBLIC;
INSERT INTO @extschema@.pg_idgen_keyed_bounds (bound, space, bucket)
SELECT COALESCE(pg_catalog.pg_sequence_last_value(s.seq), 0), s.space, g
FROM @extschema@.pg_idgen_keyed_spaces s, pg_catalog.generate_series(0, 1023) g;

-- ---------------------------------------------------------------------------------------------
-- Keyed sequences: spaces with an owner and a privilege. USAGE on a space's backing sequence is
-- the right to call keyed_next and keyed_last on it (keyed_grant, keyed_revoke); keyed_create
-- revokes it from PUBLIC. Spaces created before the update stay usable by every role, as they
-- were in 0.4.0: their sequences get USAGE for PUBLIC (keyed_revoke(space, 'public') to close).
CREATE FUNCTION keyed_grant(
    space TEXT,
    role TEXT,
    with_grant_option bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_grant_wrapper';
CREATE FUNCTION keyed_revoke(space TEXT, role TEXT) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_revoke_wrapper';
COMMENT ON FUNCTION keyed_grant(text, text, boolean) IS 'grants USAGE on a keyed space (keyed_next, keyed_last) to a role or public; superusers and holders of the grant option';
COMMENT ON FUNCTION keyed_revoke(text, text) IS 'revokes USAGE on a keyed space from a role or public, with what it granted onward';
CREATE OR REPLACE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner, c.relacl AS privileges
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space)
LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.seq;
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, highest durable bound and floor in memory, bound raises since server start, owner and privileges (USAGE: keyed_next, keyed_last)';
DO $keyed_usage$
DECLARE s pg_catalog.regclass;
BEGIN
    FOR s IN SELECT k.seq FROM @extschema@.pg_idgen_keyed_spaces k LOOP
        IF pg_catalog.to_regclass(s::pg_catalog.text) IS NOT NULL THEN
            EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO PUBLIC', s);
        END IF;
    END LOOP;
END
$keyed_usage$;
